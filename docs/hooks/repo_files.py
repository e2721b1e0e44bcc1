"""Files of the repository that the site shows but that live outside ``docs/``.

``docs_dir`` cannot reach above itself, and a symlink would not survive a Windows checkout, so
this hook hands MkDocs the README as the home page (its ``docs/...`` links rewritten to the
site's pages), the app's screenshots and icon, the benchmark results and the installers' guide,
each read from where it lives: one copy of every text, so the site and GitHub cannot disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

# site path -> repository path
PAGES = {
    "index.md": "README.md",
    "benchmark-results.md": "bench/RESULTS.md",
    "building-installers.md": "installers/README.md",
}
PICTURES = ("assets/screenshots/*.png", "assets/app.svg")
README_DOCS_LINK = re.compile(r"\]\(docs/")


def repository(config: MkDocsConfig) -> Path:
    """The checkout: mkdocs.yml sits at its root."""
    return Path(config.config_file_path).resolve().parent


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = repository(config)
    for site_path, repo_path in PAGES.items():
        files.append(File.generated(config, site_path, abs_src_path=str(root / repo_path)))
    for pattern in PICTURES:
        for picture in sorted(root.glob(pattern)):
            site_path = picture.relative_to(root).as_posix()
            files.append(File.generated(config, site_path, abs_src_path=str(picture)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The README links to ``docs/cli.md`` for GitHub; on the site that page is ``cli.md``."""
    if page.file.src_uri == "index.md":
        return README_DOCS_LINK.sub("](", markdown)
    return markdown
