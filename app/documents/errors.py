"""What can go wrong with one document; the indexer records it for that file and goes on."""

from __future__ import annotations

__all__ = ["DocumentError", "UnsupportedDocument"]


class DocumentError(Exception):
    """A file that could not be read as the document it claims to be (damaged, truncated,
    encrypted). The message names the file by its name only, never its full path."""


class UnsupportedDocument(DocumentError):
    """A file type the indexer does not read."""
