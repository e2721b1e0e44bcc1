"""Files to text: PDF (per page, with pypdf), DOCX (python-docx), HTML (Beautiful Soup), and
Markdown, plain text and source code as they are.

A file becomes ``Section``s: one per PDF page (so a citation can name the page), one for any
other file. Lines are counted from 1 within a section.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from app.documents.errors import DocumentError, UnsupportedDocument

__all__ = ["SUPPORTED_SUFFIXES", "Section", "is_supported", "parse"]

TEXT_SUFFIXES = frozenset(
    [
        ".txt",
        ".text",
        ".md",
        ".markdown",
        ".rst",
        ".org",
        ".csv",
        ".tsv",
        ".log",
        ".json",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".xml",
        ".py",
        ".pyi",
        ".js",
        ".jsx",
        ".ts",
        ".tsx",
        ".java",
        ".kt",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".go",
        ".rs",
        ".rb",
        ".php",
        ".swift",
        ".scala",
        ".sh",
        ".bash",
        ".zsh",
        ".ps1",
        ".sql",
        ".r",
        ".lua",
        ".pl",
        ".m",
        ".hs",
        ".ex",
        ".exs",
        ".clj",
        ".dart",
        ".vue",
        ".css",
        ".scss",
        ".tex",
    ]
)
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf", ".docx"}
MAX_TEXT_BYTES = 20 * 1024 * 1024  # a "text" file bigger than this is not a document to chat with


@dataclass(frozen=True, slots=True)
class Section:
    text: str
    page: int | None = None  # 1-based, for PDFs


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def parse(path: Path) -> list[Section]:
    """The file's text; ``DocumentError`` (naming the file, not its folder) when it cannot be
    read, ``UnsupportedDocument`` for a type this does not read."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".pdf":
            return _pdf(path)
        if suffix == ".docx":
            return _docx(path)
        if suffix in HTML_SUFFIXES:
            return [Section(_html(_read_text(path)))]
        if suffix in TEXT_SUFFIXES:
            return [Section(_read_text(path))]
    except DocumentError:
        raise
    except Exception as exc:  # every parser has its own exceptions for a damaged file
        raise DocumentError(f"{path.name}: cannot be read ({_describe(exc, path)})") from exc
    allowed = ", ".join(sorted(SUPPORTED_SUFFIXES))
    raise UnsupportedDocument(f"{path.name}: {suffix or 'no extension'} is not read; use {allowed}")


def _describe(exc: Exception, path: Path) -> str:
    """The parser's own words, with the file named by its name: no folder shown."""
    text = str(exc)
    for full in {str(path.resolve()), str(path), str(path.parent)}:
        text = text.replace(full + "/", "").replace(full, path.name)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _read_text(path: Path) -> str:
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise DocumentError(f"{path.name}: larger than {MAX_TEXT_BYTES // 2**20} MB of text")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise DocumentError(f"{path.name}: binary data, not text")
    return data.decode("utf-8", errors="replace")


def _pdf(path: Path) -> list[Section]:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file raises; no log spam
    reader = PdfReader(path, strict=False)
    if reader.is_encrypted:
        raise DocumentError(f"{path.name}: the PDF is encrypted")
    return [
        Section(page.extract_text() or "", number)
        for number, page in enumerate(reader.pages, start=1)
    ]


def _docx(path: Path) -> list[Section]:
    import docx

    document = docx.Document(str(path))
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        lines.extend(" | ".join(cell.text for cell in row.cells) for row in table.rows)
    return [Section("\n".join(lines))]


def _html(markup: str) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    for hidden in soup(["script", "style", "noscript", "template"]):
        hidden.decompose()
    text = soup.get_text("\n")
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())
