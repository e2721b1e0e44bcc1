"""A tool's answer as the text the model reads and the user sees, capped in size.

A server's result is untrusted: it is reduced to text here (pictures and audio are named, not
passed on), and cut to ``limit`` characters so a runaway tool cannot flood the prompt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["RESULT_LIMIT", "ToolResult", "capped", "result_text"]

RESULT_LIMIT = 8000


@dataclass(frozen=True, slots=True)
class ToolResult:
    text: str
    is_error: bool = False


def capped(text: str, limit: int = RESULT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… (cut: {len(text) - limit} more characters)"


def _piece(content: Any) -> str:
    kind = getattr(content, "type", "")
    if kind == "text":
        return str(content.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {getattr(content, 'mime_type', '') or 'unknown type'}]"
    if kind == "resource_link":
        return f"[resource: {getattr(content, 'uri', '')}]"
    if kind == "resource":
        inner = getattr(content, "resource", None)
        return str(getattr(inner, "text", "") or f"[resource: {getattr(inner, 'uri', '')}]")
    return f"[{kind or 'content'}]"


def result_text(result: Any, limit: int = RESULT_LIMIT) -> ToolResult:
    """An MCP ``CallToolResult`` as capped text (its structured content when it has no text)."""
    pieces = [_piece(c) for c in result.content or ()]
    text = "\n".join(p for p in pieces if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return ToolResult(capped(text, limit), bool(result.is_error))
