"""Progress for pulls, uploads and creates: Ollama-style lines, one per step or per blob.

Events are ``ProgressResponse`` models, Ollama's ``{status, digest, total, completed}``. A
status with ``total`` is a bar (``pulling 8eeb52dfb3bb...  23% ▕███      ▏ 1.1 GB/4.7 GB
40 MB/s  1m30s``); one without is a plain line (``verifying sha256 digest``). On a terminal
the block of lines is redrawn in place, a few times a second; anywhere else each line is
printed once, when it appears (plain) or finishes (bars), so logs stay readable.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from localllm.app.cli.formatting import format_clock, format_rate, format_size
from localllm.daemon.api import ProgressResponse

__all__ = ["ProgressBoard", "RateMeter", "Spinner", "render_bar"]

_REDRAW_SECONDS = 0.1
_RATE_WINDOW_SECONDS = 5.0
_BAR_MIN, _BAR_MAX = 10, 40


class RateMeter:
    """Bytes per second over the last few seconds (so a resumed pull reads its real speed)."""

    def __init__(self, window: float = _RATE_WINDOW_SECONDS):
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, when: float, completed: int) -> None:
        self._samples.append((when, completed))
        while len(self._samples) > 2 and when - self._samples[1][0] >= self.window:
            self._samples.popleft()

    @property
    def rate(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (t0, c0), (t1, c1) = self._samples[0], self._samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 - t0 >= 0.5 and c1 >= c0 else None


def render_bar(
    label: str, completed: int, total: int, rate: float | None = None, width: int = 80
) -> str:
    """One progress line that fits in ``width`` columns."""
    completed = min(max(completed, 0), total) if total > 0 else completed
    percent = int(completed * 100 / total) if total > 0 else 0
    done = total > 0 and completed >= total
    if done:
        right = format_size(total)
    else:
        right = f"{format_size(completed)}/{format_size(total)}"
        if rate:
            eta = format_clock((total - completed) / rate) if rate > 0 else ""
            right += f"  {format_rate(rate)}  {eta}".rstrip()
    left = f"{label}  {percent:3d}% "
    room = width - len(left) - len(right) - 4  # the two ends, a space, the last column
    cells = max(_BAR_MIN, min(_BAR_MAX, room))
    filled = cells if done else int(cells * percent / 100)
    line = f"{left}▕{'█' * filled}{' ' * (cells - filled)}▏ {right}"
    return line[: max(width - 1, 1)]


@dataclass
class _Line:
    status: str
    total: int | None = None
    completed: int = 0
    meter: RateMeter = field(default_factory=RateMeter)
    printed: bool = False  # (not a terminal) already written out

    @property
    def is_bar(self) -> bool:
        return self.total is not None and not self.status.startswith("verifying")

    @property
    def finished(self) -> bool:
        return self.total is not None and self.completed >= self.total


class ProgressBoard:
    """Draws a sequence of progress events to ``stream`` (usually stderr)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool | None = None,
        width: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream
        self.tty = _isatty(stream) if tty is None else tty
        self._width = width or _terminal_width
        self._clock = clock
        self._lines: dict[str, _Line] = {}
        self._drawn = 0
        self._last_draw = float("-inf")

    def update(self, event: ProgressResponse) -> None:
        status = event.status.strip()
        if not status:
            return
        line = self._lines.get(status)
        is_new = line is None
        if line is None:
            line = self._lines[status] = _Line(status)
        total, completed = event.total, event.completed
        if total is not None and total > 0:
            line.total = total
            line.completed = completed if completed is not None else line.completed
            line.meter.add(self._clock(), line.completed)
        if self.tty:
            self._redraw(force=is_new or line.finished)
        else:
            self._print_settled()

    def finish(self) -> None:
        """Draw the final state (a terminal) or write out the lines not yet written."""
        if self.tty:
            self._redraw(force=True)
        else:
            self._print_settled(everything=True)

    # -- terminal -------------------------------------------------------------------------
    def _redraw(self, force: bool) -> None:
        now = self._clock()
        if not force and now - self._last_draw < _REDRAW_SECONDS:
            return
        self._last_draw = now
        width = self._width()
        text = [self._render(line, width) for line in self._lines.values()]
        up = f"\x1b[{self._drawn}F" if self._drawn else "\r"
        self.stream.write(up + "".join(f"\x1b[2K{t}\n" for t in text))
        self.stream.flush()
        self._drawn = len(text)

    def _render(self, line: _Line, width: int) -> str:
        if not line.is_bar:
            return line.status[: width - 1]
        label = _bar_label(line.status)
        rate = None if line.finished else line.meter.rate
        return render_bar(label, line.completed, line.total or 0, rate, width)

    # -- logs and pipes -------------------------------------------------------------------
    def _print_settled(self, everything: bool = False) -> None:
        for line in self._lines.values():
            if not line.printed and (everything or not line.is_bar or line.finished):
                self.stream.write(self._render(line, 100) + "\n")
                line.printed = True
        self.stream.flush()


class Spinner:
    """A spinner shown on a terminal while waiting for the first token (a model may take a
    while to load); ``stop`` erases it before anything else is written there."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, stream: TextIO, interval: float = 0.1):
        self.stream = stream
        self.interval = interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Spinner:
        self._thread = threading.Thread(target=self._spin, name="spinner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stopped.set()
        self._thread.join()
        self._thread = None
        self.stream.write("\r\x1b[K")
        self.stream.flush()

    def _spin(self) -> None:
        frame = 0
        while not self._stopped.wait(0 if frame == 0 else self.interval):
            self.stream.write(f"\r{self.FRAMES[frame % len(self.FRAMES)]} ")
            self.stream.flush()
            frame += 1


def _bar_label(status: str) -> str:
    """``pulling 8eeb52dfb3bb`` gets Ollama's trailing ``...``; other labels stay as they are."""
    verb, _, rest = status.partition(" ")
    if verb == "pulling" and len(rest) == 12 and rest.isalnum():
        return f"{status}..."
    return status


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns
