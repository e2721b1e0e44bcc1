"""What the model still sees of a chat that has grown past its context.

The daemon decides it (its ``/api/chat`` drops the oldest turns that do not fit and says from
which message it kept); the chat keeps the answer, so the transcript can mark where the model's
memory starts, and the user's choice of what to do when the chat no longer fits: drop the
oldest turns, stop and say so, or have the model summarize what was dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "DIVIDER_TEXT",
    "OVERFLOW_CHOICES",
    "ChatMemory",
    "memory_start",
]

DIVIDER_TEXT = "The model no longer sees messages above this line"
# (value, label) for the chat settings' "When the chat is too long" choice
OVERFLOW_CHOICES = (
    ("drop", "Drop the oldest messages"),
    ("stop", "Stop and tell me"),
    ("summarize", "Summarize the oldest"),
)
_MODES = {value for value, _ in OVERFLOW_CHOICES}


@dataclass(frozen=True, slots=True)
class ChatMemory:
    """A chat's long-chat state, kept with it.

    ``starts_at``: the id of the first message the model saw in the last reply's request
    ("" when it saw them all); ``summary``: the model's note on the messages before
    ``summary_through`` (an id), sent after the system prompt."""

    overflow: str = "drop"
    starts_at: str = ""
    summary: str = ""
    summary_through: str = ""

    @property
    def truncates(self) -> bool:
        """The daemon may drop the oldest turns (else a chat past its context is an error)."""
        return self.overflow != "stop"

    def with_start(self, message_id: str) -> ChatMemory:
        return replace(self, starts_at=message_id)

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.__slots__}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ChatMemory:
        data = data if isinstance(data, dict) else {}
        fields = {key: str(data.get(key) or "") for key in cls.__slots__}
        if fields["overflow"] not in _MODES:
            fields["overflow"] = "drop"
        return cls(**fields)


def memory_start(turn_ids: Sequence[str], kept_from: int | None) -> str:
    """The message the model's memory starts at, from the daemon's ``kept_from`` (an index into
    the turns sent, whose ids are ``turn_ids``, "" for the system prompt); "" when nothing was
    dropped."""
    if kept_from is None or kept_from <= 0:
        return ""
    return next((turn_id for turn_id in turn_ids[kept_from:] if turn_id), "")
