"""A failed reply in the chat's own words: the daemon names API options (``num_ctx``), the
window names the settings the user can change ("Context length") and says what to do.
"""

from __future__ import annotations

import re

from app.gui.state.gateway import GatewayError

__all__ = ["SETTING_NAMES", "explain"]

# API option -> the chat setting that sets it, as the settings panel labels it
SETTING_NAMES = {
    "num_ctx": "Context length",
    "num_predict": "Max reply tokens",
    "temperature": "Temperature",
}
_OVERFLOW = re.compile(r"the prompt is (\d+) tokens but the model's context is (\d+) tokens")
_OPTION = re.compile(r"\b(?:option )?(" + "|".join(SETTING_NAMES) + r")\b")
_OVERFLOW_HINT = (
    "Raise Context length in this chat's settings (Settings, top right), delete earlier "
    "messages, or start a new chat."
)


def explain(error: Exception) -> tuple[str, str]:
    """(what went wrong, what to do next) for a reply that failed with ``error``."""
    message = error.message if isinstance(error, GatewayError) else str(error)
    hint = error.hint if isinstance(error, GatewayError) else ""
    overflow = _OVERFLOW.search(message)
    if overflow:
        prompt, context = (int(n) for n in overflow.groups())
        return (
            f"This conversation is {prompt:,} tokens, more than the Context length this chat "
            f"runs at ({context:,} tokens).",
            _OVERFLOW_HINT,
        )
    named = _OPTION.sub(lambda m: SETTING_NAMES[m.group(1)], message)
    return named or type(error).__name__, _OPTION.sub(lambda m: SETTING_NAMES[m.group(1)], hint)
