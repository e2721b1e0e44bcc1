"""The daemon's OpenAPI schema, made from the FastAPI app at build time, one file per API page.

The app is built the way the tests build it (``create_app`` on settings whose folders are all
in a temporary folder), never started: FastAPI derives the schema from the routes and their
pydantic models, so the reference pages cannot drift from the code. Each API page renders its
part with neoteroi's ``[OAD(...)]`` tag, which reads a file relative to the page; the parts are
written to ``build/docs/`` (ignored by git). A route that no page claims is a warning, which
fails the strict build: a new route family needs a page.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.openapi")

Schema = dict[str, Any]

RERANK_PATHS = {"/v1/rerank", "/rerank", "/v1/reranking", "/v2/rerank", "/api/rerank"}
DAEMON_PATHS = {"/", "/health", "/metrics"}

# API page -> which paths it documents; a path goes to the first page that claims it
FAMILIES: dict[str, Callable[[str], bool]] = {
    "rerank": lambda path: path in RERANK_PATHS,
    "audio": lambda path: path.startswith("/v1/audio/"),
    "responses": lambda path: path.startswith("/v1/responses"),
    "anthropic": lambda path: path.startswith("/v1/messages"),
    "openai": lambda path: path.startswith("/v1/"),
    "ollama": lambda path: path.startswith("/api/") or path in DAEMON_PATHS,
}


def daemon_schema() -> Schema:
    """The schema of a daemon app built on throwaway folders (nothing is started)."""
    from localllm.daemon.server.app import create_app
    from localllm.daemon.settings import Settings

    with tempfile.TemporaryDirectory(prefix="localllm-docs-") as folder:
        root = Path(folder)
        settings = Settings(
            models_dir=root / "models",
            data_dir=root / "data",
            log_dir=root / "logs",
            config_dir=root / "config",
        )
        with warnings.catch_warnings():  # GET and HEAD / share a handler, so an operation id
            warnings.simplefilter("ignore")
            return create_app(settings).openapi()


def split(schema: Schema) -> dict[str, Schema]:
    """One schema per API page: its paths and the components they reach."""
    parts: dict[str, dict[str, Any]] = {family: {} for family in FAMILIES}
    for path, operations in schema["paths"].items():
        family = next((name for name, claims in FAMILIES.items() if claims(path)), None)
        if family is None:
            log.warning("the daemon's route %s is on no API page (docs/hooks/openapi.py)", path)
            continue
        parts[family][path] = operations
    components = schema.get("components", {}).get("schemas", {})
    return {
        family: {
            **{key: value for key, value in schema.items() if key not in ("paths", "components")},
            "paths": paths,
            "components": {"schemas": _reached(paths, components)},
        }
        for family, paths in parts.items()
    }


def _reached(paths: Schema, components: Schema) -> Schema:
    """The component schemas that ``paths`` refer to, directly or through other components."""
    names: set[str] = set()
    pending = list(_refs(paths))
    while pending:
        name = pending.pop()
        if name not in names and name in components:
            names.add(name)
            pending.extend(_refs(components[name]))
    return {name: components[name] for name in sorted(names)}


def _refs(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.rsplit("/", 1)[1]
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _write(path: Path, text: str) -> None:
    """Atomically, so a build beside a running ``mkdocs serve`` never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    schema = daemon_schema()
    out = Path(config.config_file_path).resolve().parent / "build" / "docs"
    # our heading for the schema instead of the plugin's own first-level one
    oad = config.plugins["neoteroi.mkdocsoad"]
    oad.config["templates_path"] = str(Path(__file__).parent / "openapi_templates")
    for family, part in split(schema).items():
        _write(out / f"openapi-{family}.json", json.dumps(part, indent=1))
    config["openapi_json"] = json.dumps(schema, indent=1)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """The whole schema, for download beside the pages that render it."""
    files.append(File.generated(config, "api/openapi.json", content=config["openapi_json"]))
    return files
