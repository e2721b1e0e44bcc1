"""Files to text: PDF (per page, with pypdf), DOCX (python-docx), HTML (Beautiful Soup), and
Markdown, plain text and source code as they are.

A file becomes ``Section``s: one per PDF page (so a citation can name the page), one for any
other file. Lines are counted from 1 within a section. Parsers work on the bytes
``reading.read_document`` read from the open file, within caps: the file's size by type, a
DOCX's unpacked parts as its zip declares them (zipfile never inflates past that), a PDF's
pages and its text (pypdf caps each stream it inflates).
"""

from __future__ import annotations

import io
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePath

from localllm.app.documents.errors import DocumentError, UnsupportedDocument
from localllm.app.documents.reading import read_document

__all__ = ["SUPPORTED_SUFFIXES", "Section", "is_supported", "parse", "parse_bytes", "size_limit"]

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
MAX_PDF_BYTES = 128 << 20
MAX_DOCX_BYTES = 64 << 20
MAX_UNPACKED = 256 << 20  # a DOCX's parts, unpacked, as its zip declares them
MAX_PARTS = 10_000
MAX_PAGES = 5_000


@dataclass(frozen=True, slots=True)
class Section:
    text: str
    page: int | None = None  # 1-based, for PDFs


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def size_limit(path: PurePath) -> int:
    """The most bytes a file of ``path``'s type may have to be read."""
    suffix = path.suffix.lower()
    return {".pdf": MAX_PDF_BYTES, ".docx": MAX_DOCX_BYTES}.get(suffix, MAX_TEXT_BYTES)


def parse(path: Path, root: Path | None = None) -> list[Section]:
    """The text of ``path``, a regular file inside ``root`` (its own folder by default), read
    once; see :func:`parse_bytes`."""
    root = root or path.resolve().parent
    return parse_bytes(path.name, read_document(path, root, size_limit(path)).data)


def parse_bytes(name: str, data: bytes) -> list[Section]:
    """The text of a file called ``name`` holding ``data``; ``DocumentError`` (naming the file,
    not its folder) when it cannot be read, ``UnsupportedDocument`` for a type not read."""
    suffix = PurePath(name).suffix.lower()
    try:
        if suffix == ".pdf":
            return _pdf(name, data)
        if suffix == ".docx":
            return _docx(name, data)
        if suffix in HTML_SUFFIXES:
            return [Section(_html(_text(name, data)))]
        if suffix in TEXT_SUFFIXES:
            return [Section(_text(name, data))]
    except DocumentError:
        raise
    except Exception as exc:  # every parser has its own exceptions for a damaged file
        raise DocumentError(f"{name}: cannot be read ({_describe(exc)})") from exc
    allowed = ", ".join(sorted(SUPPORTED_SUFFIXES))
    raise UnsupportedDocument(f"{name}: {suffix or 'no extension'} is not read; use {allowed}")


def _describe(exc: Exception) -> str:
    """The parser's own words (they parse bytes in memory: no path to hide)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text(name: str, data: bytes) -> str:
    if len(data) > MAX_TEXT_BYTES:
        raise DocumentError(f"{name}: larger than {MAX_TEXT_BYTES // 2**20} MB of text")
    if b"\x00" in data[:8192]:
        raise DocumentError(f"{name}: binary data, not text")
    return data.decode("utf-8", errors="replace")


def _pdf(name: str, data: bytes) -> list[Section]:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file raises; no log spam
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        raise DocumentError(f"{name}: the PDF is encrypted")
    if len(reader.pages) > MAX_PAGES:
        raise DocumentError(f"{name}: more than {MAX_PAGES:,} pages")
    sections, size = [], 0
    for number, page in enumerate(reader.pages, start=1):
        sections.append(Section(page.extract_text() or "", number))
        size += len(sections[-1].text)
        if size > MAX_TEXT_BYTES:
            raise DocumentError(f"{name}: more than {MAX_TEXT_BYTES // 2**20} MB of text")
    return sections


def _docx(name: str, data: bytes) -> list[Section]:
    import docx

    _check_unpacked(name, data)
    document = docx.Document(io.BytesIO(data))
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        lines.extend(" | ".join(cell.text for cell in row.cells) for row in table.rows)
    return [Section("\n".join(lines))]


def _check_unpacked(name: str, data: bytes) -> None:
    """A DOCX is a zip: refuse one whose parts unpack past ``MAX_UNPACKED`` (a zip bomb)
    before anything inflates them. zipfile stops each part at the size it declares."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        parts = archive.infolist()
    if len(parts) > MAX_PARTS:
        raise DocumentError(f"{name}: more than {MAX_PARTS:,} parts in the document")
    if sum(part.file_size for part in parts) > MAX_UNPACKED:
        raise DocumentError(f"{name}: unpacks to more than {MAX_UNPACKED >> 20} MB")


def _html(markup: str) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    for hidden in soup(["script", "style", "noscript", "template"]):
        hidden.decompose()
    text = soup.get_text("\n")
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())
