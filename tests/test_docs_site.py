"""The documentation: the README stays a front door, and the site builds strictly, offline.

``mkdocs build --strict`` turns every warning into a failure, and ``mkdocs.yml`` makes a
warning of everything MkDocs can check: a broken link or anchor, a missing image, a page left
out of the navigation, a navigation entry without its page. The build also writes the daemon's
OpenAPI schema (``docs/hooks/openapi.py``), so the API pages show the routes the code has.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
QUICK_START = (
    "./dev app      # install everything into ./.venv and open localllm\n"
    "./dev test     # install everything and run the whole check: lint, import contracts, tests\n"
)
IMAGE = re.compile(r'<img[^>]* src="([^"]+)"')
ROUTE_HEADING = re.compile(r'<h3 id="[^"]*"><span class="http-\w+">(.*?)</h3>', re.DOTALL)
TAG = re.compile(r"<[^>]+>")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as `./dev docs` would serve it, into a folder of this test's own."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's banner about its future
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr}"
    return out


def nav_pages() -> list[str]:
    """Every page the navigation of mkdocs.yml lists, in order."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return list(_pages(config["nav"]))


def _pages(entry: object):
    if isinstance(entry, str):
        yield entry
    elif isinstance(entry, list):
        for item in entry:
            yield from _pages(item)
    elif isinstance(entry, dict):
        for value in entry.values():
            yield from _pages(value)


def html_of(site: Path, page: str) -> Path:
    """Where a page of the navigation lands (``cli.md`` -> ``cli/index.html``)."""
    stem = page.removesuffix(".md")
    if stem == "index" or stem.endswith("/index"):
        return site / f"{stem}.html"
    return site / stem / "index.html"


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    first_section = text.split("\n## ", 2)[1]
    assert first_section.startswith("Quick start\n")
    first_code = text.split("```sh\n", 1)[1].split("```", 1)[0]
    assert first_code == QUICK_START, "the quick start's two commands come first, as they were"


def test_every_topic_has_its_page():
    pages = set(nav_pages())
    topics = {
        "cli.md",
        "api/openai.md",
        "api/responses.md",
        "api/anthropic.md",
        "api/ollama.md",
        "api/rerank.md",
        "api/audio.md",
        "agents.md",
        "app.md",
        "models.md",
        "serving.md",
        "memory.md",
        "gpu.md",
        "remotes.md",
        "security.md",
        "install.md",
        "configuration.md",
        "troubleshooting.md",
        "benchmarks.md",
        "development.md",
    }
    assert topics <= pages
    on_disk = {path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md")}
    assert on_disk <= pages, "every page in docs/ is in the navigation"


def test_the_site_has_every_page(site):
    missing = [page for page in nav_pages() if not html_of(site, page).is_file()]
    assert not missing
    assert "Quick start" in (site / "index.html").read_text(encoding="utf-8")


def test_every_image_is_there(site):
    pages = [html_of(site, page) for page in nav_pages()]
    shown = {
        (page, source)
        for page in pages
        for source in IMAGE.findall(page.read_text(encoding="utf-8"))
        if not source.startswith(("http:", "https:", "data:"))
    }
    assert any("assets/screenshots/" in source for _, source in shown)
    broken = [
        f"{page.relative_to(site)}: {source}"
        for page, source in shown
        if not (page.parent / unquote(source)).is_file()
    ]
    assert not broken


def test_the_api_pages_render_the_daemons_schema(site):
    schema = json.loads((site / "api" / "openapi.json").read_text(encoding="utf-8"))
    routes = {
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method in operations
    }
    assert "POST /v1/chat/completions" in routes
    rendered = {
        TAG.sub("", heading).replace("&para;", "").strip()
        for page in nav_pages()
        if page.startswith("api/")
        for heading in ROUTE_HEADING.findall(html_of(site, page).read_text(encoding="utf-8"))
    }
    assert routes - rendered == set(), "each route is rendered on an API page"
