"""What the CLI says when something fails: one ``Error: ...`` line, never a traceback.

Commands raise :class:`CliError` for mistakes they find themselves (a missing file, an empty
prompt); ``daemon.client`` errors pass through unchanged and are worded here, at the edge.
"""

from __future__ import annotations

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_USAGE", "CliError", "error_lines"]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C


class CliError(Exception):
    """A failure the user can act on; ``exit_code`` is what ``localllm`` returns."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR):
        self.exit_code = exit_code
        super().__init__(message)


def error_lines(error: BaseException) -> list[str]:
    """``Error: <message>`` on one line, then any details the error carries (a log's tail)."""
    message = " ".join(str(error).split()) or type(error).__name__
    lines = [f"Error: {message}"]
    details = getattr(error, "details", None)
    if isinstance(details, list | tuple):
        lines += [f"  {detail}" for detail in details]
    return lines
