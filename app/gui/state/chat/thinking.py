"""A thinking model's reasoning in the app: the per-chat Think setting, the clock that times a
reply's thinking, and the line that sums it up ("Thought for 3.2 s · 412 words").

The reasoning is kept apart from the answer from the first streamed piece to the disk, so
copying, continuing or searching a reply never mixes the two.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["THINK_CHOICES", "ThinkingClock", "think_request", "thinking_summary"]

#: the Think setting's values and how the settings panel names them; "" leaves it to the model
THINK_CHOICES: tuple[tuple[str, str], ...] = (
    ("", "model default"),
    ("on", "on"),
    ("off", "off"),
    ("low", "on, low effort"),
    ("medium", "on, medium effort"),
    ("high", "on, high effort"),
)
_REQUEST: dict[str, bool | str | None] = {"": None, "on": True, "off": False}


def think_request(setting: str) -> bool | str | None:
    """The ``think`` field a chat's setting sends: None (the model's default), true, false
    or an effort. An unknown value (a newer app's) means the default."""
    if setting in ("low", "medium", "high"):
        return setting
    return _REQUEST.get(setting)


class ThinkingClock:
    """Times one reply's thinking: from its first piece to the answer's first piece (or to the
    end, when the reply stops while still thinking)."""

    def __init__(self, clock: Callable[[], float], earlier: float = 0.0):
        self._clock = clock
        self._earlier = earlier  # a continued reply's thinking time so far
        self._started: float | None = None
        self._ended: float | None = None

    @property
    def thinking(self) -> bool:
        """Thinking now: it began and no answer has come yet."""
        return self._started is not None and self._ended is None

    def thought(self) -> None:
        if self._started is None:
            self._started = self._clock()

    def answered(self) -> None:
        if self.thinking:
            self._ended = self._clock()

    def seconds(self) -> float | None:
        """Seconds thought so far (this reply and any it continues); None if it never thought."""
        if self._started is None:
            return self._earlier or None
        end = self._ended if self._ended is not None else self._clock()
        return self._earlier + end - self._started


def thinking_summary(thinking: str, seconds: float | None, live: bool = False) -> str:
    """``Thought for 3.2 s · 412 words``; while it goes on, ``Thinking… 3.2 s · 412 words``."""
    words = len(thinking.split())
    count = f"{words:,} word{'' if words == 1 else 's'}"
    took = _duration(seconds)
    if live:
        return f"Thinking… {took} · {count}" if took else f"Thinking… · {count}"
    return f"Thought for {took} · {count}" if took else f"Thought · {count}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"
