"""The numbers under a reply: speed, time to the first token, why it stopped, context used.

``ReplyMeter`` measures a reply as it streams, so the stats line shows live numbers (never the
previous reply's) and a stopped reply still says what was measured until the stop: the daemon
only reports its own timings in the final chunk, which a stopped reply never gets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from localllm.app.gui.state.records import ChatDone

__all__ = ["STREAMING", "ReplyMeter", "ReplyStats"]

STREAMING = "streaming"  # the done_reason of live numbers: the reply is still coming
CONTINUABLE = frozenset({"length", "stopped"})  # cut off: "Continue" can write more


@dataclass(frozen=True, slots=True)
class ReplyStats:
    """What users read after each reply: speed, time to first token, why it stopped."""

    tokens: int
    tokens_per_second: float | None
    first_token_seconds: float | None
    total_seconds: float
    prompt_tokens: int = 0
    done_reason: str = "stop"
    # prompt + reply tokens of the request that wrote this reply last (a continued reply's
    # ``tokens`` counts every part; this is what the context held at its end); 0 if unknown
    context_tokens: int = 0

    @property
    def context_used(self) -> int:
        return self.context_tokens or self.prompt_tokens + self.tokens

    @property
    def cut_off(self) -> bool:
        """Ended by the token limit or by Stop, not by the model: it can be continued."""
        return self.done_reason in CONTINUABLE

    def summary(self) -> str:
        if self.done_reason == STREAMING and not self.tokens:
            return "waiting for the first token…"
        parts = []
        if self.tokens_per_second is not None:
            parts.append(f"{self.tokens_per_second:.1f} tok/s")
        if self.tokens:
            parts.append(f"{self.tokens} token{'s' if self.tokens != 1 else ''}")
        if self.first_token_seconds is not None:
            parts.append(f"first token {self.first_token_seconds * 1000:.0f} ms")
        if self.done_reason == "length":
            parts.append("stopped at the token limit")
        elif self.done_reason == "stopped":
            parts.append("stopped")
        return " · ".join(parts)

    def after(self, earlier: ReplyStats | None) -> ReplyStats:
        """These numbers for a continuation, counting the tokens written before it too."""
        if earlier is None:
            return self
        return replace(self, tokens=earlier.tokens + self.tokens)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "tokens_per_second": self.tokens_per_second,
            "first_token_seconds": self.first_token_seconds,
            "total_seconds": self.total_seconds,
            "prompt_tokens": self.prompt_tokens,
            "done_reason": self.done_reason,
            "context_tokens": self.context_tokens,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ReplyStats | None:
        return cls(**data) if data else None


class ReplyMeter:
    """Times one reply on our clock and counts its streamed pieces (one per token)."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self.started = clock()
        self.first: float | None = None
        self.last: float | None = None
        self.pieces = 0

    def piece(self, text: str) -> None:
        now = self._clock()
        if text and self.first is None:
            self.first = now
        if self.first is not None:
            self.pieces += 1
            self.last = now

    def live(self) -> ReplyStats:
        return self._measured(STREAMING)

    def finish(self, done: ChatDone | None) -> ReplyStats:
        """The daemon's own counts and eval timing when it sent them; else ours (Stop)."""
        if done is None:
            return self._measured("stopped")
        speed = done.eval_count / (done.eval_duration / 1e9) if done.eval_duration > 0 else None
        return ReplyStats(
            done.eval_count,
            speed,
            self._first_token_seconds(),
            self._clock() - self.started,
            done.prompt_eval_count,
            done.done_reason or "stop",
            done.prompt_eval_count + done.eval_count,
        )

    def _measured(self, reason: str) -> ReplyStats:
        speed = None
        if self.pieces > 1 and self.first is not None and self.last is not None:
            elapsed = self.last - self.first
            speed = (self.pieces - 1) / elapsed if elapsed > 0 else None
        return ReplyStats(
            self.pieces, speed, self._first_token_seconds(), self._clock() - self.started, 0, reason
        )

    def _first_token_seconds(self) -> float | None:
        return self.first - self.started if self.first is not None else None
