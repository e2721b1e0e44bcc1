"""Creating a model from a Modelfile whose files are uploaded blobs, optionally quantized.

The daemon never opens a path a client names: every ``FROM``/``ADAPTER`` file reference must
be a key of the request's ``files`` map and resolves to that blob in the store; anything else
is refused before a byte is read, and the refusal names no path. Quantizing runs llama.cpp in
a child process (``daemon.runners.worker.quantize``), so a hostile file cannot crash us.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import cast

from anyio import to_thread

from localllm.daemon.errors import BadRequestError, QuantizeError
from localllm.daemon.runners.worker.quantize import QUANT_TYPES
from localllm.model_registry.adapters import is_lora_adapter, read_lora_adapter, shown_name
from localllm.model_registry.digests import Digest
from localllm.model_registry.draft_weights import resolve_draft
from localllm.model_registry.errors import (
    BlobNotFoundError,
    GGUFError,
    ModelNotFoundError,
)
from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.importer import create_from_modelfile, modelfile_base
from localllm.model_registry.modelfile import Adapter, Modelfile, from_is_path
from localllm.model_registry.names import ModelName
from localllm.model_registry.store import LayerType, Manifest, Store

__all__ = ["QUANTIZABLE", "blob_resolver", "check_create", "create_model", "normalize_quant"]

log = logging.getLogger("localllm.create")

QUANTIZABLE = ("F16", "BF16", "F32")  # what a quantization may start from
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
_QUANTIZED = "./quantized.gguf"
_BASE_DRAFT = "./base-draft.gguf"

Resolver = Callable[[str], Path]


def normalize_quant(value: str | None) -> str | None:
    if not value:
        return None
    quant = value.strip().upper()
    if quant not in QUANT_TYPES:
        raise BadRequestError(
            f"unsupported quantization {value!r}; choose one of {', '.join(QUANT_TYPES)}",
            param="quantize",
        )
    return quant


def blob_resolver(store: Store, files: Mapping[str, Digest]) -> Resolver:
    """``FROM``/``ADAPTER`` reference -> its uploaded blob; never a client-named path."""

    def resolve(reference: str) -> Path:
        digest = files.get(reference)
        shown = shown_name(reference)
        if digest is None:
            raise BadRequestError(
                f"{shown} was not uploaded: the daemon never reads files by path; upload it "
                "(POST /api/blobs/<digest>) and list it in `files`",
                param="files",
            )
        try:
            return store.blobs.path(digest)
        except BlobNotFoundError:
            raise BadRequestError(
                f"blob {digest.short} for {shown} was not uploaded; upload it first",
                param="files",
            ) from None

    return resolve


def check_create(
    store: Store, modelfile: Modelfile, resolve: Resolver, quantize: str | None
) -> None:
    """Refuse a create that cannot work before any step runs (so it is a plain 400): a file
    that was not uploaded, an upload that is not a GGUF model, an ADAPTER that is not a LoRA
    adapter for the base model's architecture, a base model that is missing, a DRAFT that is
    missing or has another vocabulary, a quantization of weights that are already quantized."""
    adapters = [resolve(adapter.reference) for adapter in modelfile.adapters]
    architecture = _base_architecture(store, modelfile, resolve)
    for adapter, path in zip(modelfile.adapters, adapters, strict=True):
        read_lora_adapter(path, architecture, shown_name(adapter.reference))
    if modelfile.draft is not None:
        resolve_draft(store, modelfile, resolve, _first_weights(store, modelfile, resolve))
    if quantize is not None:
        _quantizable(read_gguf_info(_weights(store, modelfile, resolve)).file_type)


def _base_architecture(store: Store, modelfile: Modelfile, resolve: Resolver) -> str | None:
    """The architecture of the model being created (checking the FROM file is a model)."""
    if not from_is_path(modelfile.from_):
        return (
            str(store.read_config(modelfile_base(store, modelfile)).get("architecture") or "")
            or None
        )
    info = read_gguf_info(resolve(modelfile.from_))
    if info.is_projector:
        raise GGUFError("the FROM file is a vision projector (mmproj), not a model")
    if is_lora_adapter(info):
        raise GGUFError(
            "the FROM file is a LoRA adapter; name it with ADAPTER, FROM its base model"
        )
    return info.architecture


def _quantizable(file_type: str) -> None:
    if file_type not in QUANTIZABLE:
        raise BadRequestError(
            f"can only quantize {'/'.join(QUANTIZABLE)} models; this one is {file_type}",
            param="quantize",
        )


async def create_model(
    store: Store,
    name: ModelName,
    modelfile: Modelfile,
    resolve: Resolver,
    quantize: str | None,
    work_dir: Path,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[dict[str, str]]:
    """Create ``name``; yields Ollama-style ``{"status": ...}`` steps, ending in success.
    ``env`` is the quantizer's environment (``Settings.runner_env``); None inherits."""
    yield {"status": "parsing modelfile"}
    if quantize is not None:
        source = await to_thread.run_sync(_weights, store, modelfile, resolve)
        info = await to_thread.run_sync(read_gguf_info, source)
        _quantizable(info.file_type)
        yield {"status": f"quantizing {info.file_type} model to {quantize}"}
        work_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=work_dir, prefix="quantize-") as temp:
            output = Path(temp) / "quantized.gguf"
            await _quantize(source, output, quantize, env)
            effective, resolver = await to_thread.run_sync(
                _quantized_plan, store, modelfile, resolve, output
            )
            yield {"status": "creating model layers"}
            await to_thread.run_sync(create_from_modelfile, store, name, effective, resolver)
    else:
        yield {"status": "creating model layers"}
        await to_thread.run_sync(create_from_modelfile, store, name, modelfile, resolve)
    yield {"status": "writing manifest"}
    yield {"status": "success"}


# -- quantizing ------------------------------------------------------------------------------
def _weights(store: Store, modelfile: Modelfile, resolve: Resolver) -> Path:
    """The one GGUF file a quantization starts from: the uploaded file or the base's weights."""
    if from_is_path(modelfile.from_):
        return resolve(modelfile.from_)
    layers = modelfile_base(store, modelfile).layers_of(LayerType.MODEL)
    if len(layers) != 1:
        raise BadRequestError("quantizing a sharded model is not supported", param="quantize")
    return store.blobs.path(layers[0].digest)


def _first_weights(store: Store, modelfile: Modelfile, resolve: Resolver) -> Path:
    """The (first) weights file of the model being created: the upload or the base's."""
    if from_is_path(modelfile.from_):
        return resolve(modelfile.from_)
    return store.blobs.path(modelfile_base(store, modelfile).layers_of(LayerType.MODEL)[0].digest)


def _quantized_plan(
    store: Store, modelfile: Modelfile, resolve: Resolver, output: Path
) -> tuple[Modelfile, Resolver]:
    """The Modelfile that imports the quantized file, keeping what the base model carried."""
    if from_is_path(modelfile.from_):
        base_files: dict[str, Path] = {}
    else:
        modelfile, base_files = _inherit(store, modelfile)
    effective = dataclasses.replace(modelfile, from_=_QUANTIZED)
    local = {_QUANTIZED: output, **base_files}

    def resolver(reference: str) -> Path:
        return local[reference] if reference in local else resolve(reference)

    return effective, resolver


def _inherit(store: Store, modelfile: Modelfile) -> tuple[Modelfile, dict[str, Path]]:
    """Fill what the Modelfile leaves unset from its base model (as deriving would)."""
    base = modelfile_base(store, modelfile)
    params = store.read_json_layer(base, LayerType.PARAMS)
    messages = cast(list[object], store.read_json_layer(base, LayerType.MESSAGES) or [])
    licenses = store.read_text_layer(base, LayerType.LICENSE)
    layers = base.layers_of(LayerType.ADAPTER)
    adapters = {
        f"./base-adapter-{i}": store.blobs.path(layer.digest) for i, layer in enumerate(layers)
    }
    inherited = [
        Adapter(reference, layer.scale) for reference, layer in zip(adapters, layers, strict=True)
    ]
    draft, draft_files = (modelfile.draft, {}) if modelfile.draft else _inherited_draft(store, base)
    merged = dataclasses.replace(
        modelfile,
        draft=draft,
        system=_first(modelfile.system, store.read_text_layer(base, LayerType.SYSTEM)),
        template=_first(modelfile.template, store.read_text_layer(base, LayerType.TEMPLATE)),
        parameters={**(params if isinstance(params, dict) else {}), **modelfile.parameters},
        messages=modelfile.messages
        or [(str(m.get("role")), str(m.get("content"))) for m in messages if isinstance(m, dict)],
        license=modelfile.license or ([licenses] if licenses else []),
        adapters=[*inherited, *modelfile.adapters],
    )
    return merged, {**adapters, **draft_files}


def _inherited_draft(store: Store, base: Manifest) -> tuple[str | None, dict[str, Path]]:
    """The base model's draft as a ``DRAFT`` line: the installed model it was named after
    while that still holds the same weights, else its weights file."""
    layers = base.layers_of(LayerType.DRAFT)
    if not layers:
        return None, {}
    name = cast(str | None, store.read_config(base).get("draft"))  # JSON: the name or none
    try:
        installed = store.read_manifest(name).layers_of(LayerType.MODEL) if name else []
    except ModelNotFoundError:
        installed = []
    if [layer.digest for layer in installed] == [layer.digest for layer in layers]:
        return name, {}
    if len(layers) != 1:
        return None, {}  # a draft in several files and no longer installed: not carried over
    return _BASE_DRAFT, {_BASE_DRAFT: store.blobs.path(layers[0].digest)}


def _first(value: str | None, fallback: str | None) -> str | None:
    return value if value is not None else fallback


async def _quantize(source: Path, output: Path, quant: str, env: Mapping[str, str] | None) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "localllm.daemon.runners.worker.quantize",
        str(source),
        str(output),
        quant,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=_PACKAGE_ROOT,
        env=None if env is None else dict(env),
    )
    try:
        _, stderr = await process.communicate()
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    if process.returncode != 0:
        log.warning("quantize exited with %s:\n%s", process.returncode, stderr.decode()[-4000:])
        raise QuantizeError(
            f"quantizing to {quant} failed (llama.cpp exit code {process.returncode}); "
            "see the daemon log"
        )
