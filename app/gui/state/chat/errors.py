"""A failed reply in the chat's own words: the daemon names API options (``num_ctx``), the
window names the settings the user can change ("Context length") and says what to do.
"""

from __future__ import annotations

import re

from app.gui.state.gateway import GatewayError

__all__ = ["SETTING_NAMES", "explain", "overflowed"]

# API option -> the chat setting that sets it, as the settings panel labels it
SETTING_NAMES = {
    "num_ctx": "Context length",
    "num_predict": "Max reply tokens",
    "temperature": "Temperature",
}
_OVERFLOW = re.compile(r"the prompt is (\d+) tokens but the model's context is (\d+) tokens")
_OPTION = re.compile(r"\b(?:option )?(" + "|".join(SETTING_NAMES) + r")\b")
_OVERFLOW_HINT = (
    "Raise Context length in this chat's settings (Settings, top right), let the chat drop "
    "its oldest messages (Long chats, in the same settings), delete earlier messages, or start "
    "a new chat."
)
_OVERFLOWED = "more than the Context length this chat runs at"


def overflowed(error: str) -> bool:
    """A reply's error (as ``explain`` put it) says the chat no longer fits its context."""
    return _OVERFLOWED in error


def explain(error: Exception) -> tuple[str, str]:
    """(what went wrong, what to do next) for a reply that failed with ``error``."""
    message = error.message if isinstance(error, GatewayError) else str(error)
    hint = error.hint if isinstance(error, GatewayError) else ""
    overflow = _OVERFLOW.search(message)
    if overflow:
        prompt, context = (int(n) for n in overflow.groups())
        return (
            f"This conversation is {prompt:,} tokens, {_OVERFLOWED} ({context:,} tokens).",
            _OVERFLOW_HINT,
        )
    named = _OPTION.sub(lambda m: SETTING_NAMES[m.group(1)], message)
    return named or type(error).__name__, _OPTION.sub(lambda m: SETTING_NAMES[m.group(1)], hint)
