"""A failed reply in the chat's own words: the daemon names API options (``num_ctx``), the
window names the settings the user can change ("Context length") and says what to do.

A load the daemon refused because its memory plan does not fit (507) says so with the plan's
figures; its hint offers "Load anyway" (``memory_refused``), which asks again with the option
``load_anyway``, for those who know better: the plan is an estimate.
"""

from __future__ import annotations

import re

from localllm.app.gui.state.gateway import GatewayError

__all__ = ["LOAD_ANYWAY_HINT", "SETTING_NAMES", "explain", "memory_refused", "overflowed"]

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
_REFUSED_FOR_MEMORY = 507  # the daemon's status for a load whose plan does not fit
LOAD_ANYWAY_HINT = (
    "Unload other models on the Server page, or lower Context length in this chat's settings; "
    "or Load anyway, if you know it fits (the plan is an estimate: if it does not, the system "
    "may stop the model)."
)


def overflowed(error: str) -> bool:
    """A reply's error (as ``explain`` put it) says the chat no longer fits its context."""
    return _OVERFLOWED in error


def memory_refused(hint: str) -> bool:
    """A reply's hint (as ``explain`` put it) says its model's load was refused for memory."""
    return hint == LOAD_ANYWAY_HINT


def explain(error: Exception) -> tuple[str, str]:
    """(what went wrong, what to do next) for a reply that failed with ``error``."""
    message = error.message if isinstance(error, GatewayError) else str(error)
    hint = error.hint if isinstance(error, GatewayError) else ""
    if isinstance(error, GatewayError) and error.status == _REFUSED_FOR_MEMORY:
        hint = LOAD_ANYWAY_HINT
    overflow = _OVERFLOW.search(message)
    if overflow:
        prompt, context = (int(n) for n in overflow.groups())
        return (
            f"This conversation is {prompt:,} tokens, {_OVERFLOWED} ({context:,} tokens).",
            _OVERFLOW_HINT,
        )
    named = _OPTION.sub(lambda m: SETTING_NAMES[m.group(1)], message)
    return named or type(error).__name__, _OPTION.sub(lambda m: SETTING_NAMES[m.group(1)], hint)
