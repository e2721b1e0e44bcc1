"""What went wrong with an MCP server, in one line for the user."""

from __future__ import annotations

__all__ = ["ToolError", "explain"]


class ToolError(Exception):
    """A tool could not be listed or run: the server did not start, crashed, hung or refused."""


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (anyio wraps a task's failure in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def explain(exc: BaseException) -> str:
    leaf = _leaf(exc)
    if isinstance(leaf, FileNotFoundError):
        return f"no such program: {leaf.filename or leaf}"
    if isinstance(leaf, PermissionError):
        return "the program may not be run (permission denied)"
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror
    text = str(leaf).strip() or type(leaf).__name__
    return text.splitlines()[0][:300]
