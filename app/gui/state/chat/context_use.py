"""How full a chat's context is: the tokens the last reply's request held (the daemon's
``prompt_eval_count + eval_count``) out of the context length the chat runs at.

A stopped reply has no count from the daemon; the last counted one is used, plus what was
streamed since, so the meter never goes blank mid-conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from localllm.app.gui.state.chat.records import Message

__all__ = ["ContextUse"]

_NEARLY_FULL = 0.85


@dataclass(frozen=True, slots=True)
class ContextUse:
    used: int
    available: int | None  # None until the model's context length is known

    @classmethod
    def of(
        cls, messages: Sequence[Message], available: int | None, streamed: int = 0
    ) -> ContextUse:
        """From the conversation as shown, plus ``streamed`` tokens of a reply in progress."""
        used = streamed
        for message in reversed(messages):
            stats = message.stats
            if stats is None or message.failed:
                continue
            if stats.context_tokens or stats.prompt_tokens:
                return cls(used + stats.context_used, available)
            used += stats.tokens  # a stopped reply: counted by us, not by the daemon
        return cls(used, available)

    @property
    def fraction(self) -> float | None:
        return min(1.0, self.used / self.available) if self.available else None

    @property
    def nearly_full(self) -> bool:
        return (self.fraction or 0.0) >= _NEARLY_FULL

    def text(self) -> str:
        if not self.available:
            return f"Context: {self.used:,} tokens" if self.used else ""
        share = round(100 * (self.fraction or 0.0))
        return f"Context: {self.used:,} of {self.available:,} tokens ({share}%)"

    def texts(self) -> tuple[str, ...]:
        """``text`` and shorter forms for a narrow header, longest first: "Context: 135 of
        4,096 tokens (3%)", "135 of 4,096 (3%)", "3%"."""
        if not self.available or not self.text():
            return (self.text(),)
        share = f"{round(100 * (self.fraction or 0.0))}%"
        return (self.text(), f"{self.used:,} of {self.available:,} ({share})", share)

    def advice(self) -> str:
        """The tooltip: what the numbers are and what to do when the context fills up."""
        what = (
            "Tokens the conversation takes up (the last reply's prompt and answer, as the "
            "daemon counted them) out of the Context length this chat runs at."
        )
        if self.nearly_full:
            return (
                f"{what} It is nearly full: raise Context length in the chat settings, delete "
                "earlier messages, or start a new chat."
            )
        return what
