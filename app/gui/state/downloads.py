"""Download progress as users want it: bytes, speed, time left, and what state it is in.

Pulls belong to the daemon; this only watches them. It merges two sources: the progress stream
of a pull this window started, and the daemon's list of pulls (``pulls()``), which is how
downloads started before the window opened show up again. Names are kept lower-case, as the
daemon lists them (``hf.co/Org/Repo:Q4_K_M`` is listed as ``hf.co/org/repo:q4_k_m``), so both
sources meet on one row. Qt-free; the clock is injectable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, replace

from localllm.app.gui.state.records import PullProgress, PullStatus

__all__ = ["Download", "Downloads", "download_key"]

_SMOOTHING = 0.3  # weight of the newest speed sample
_MIN_INTERVAL = 0.5  # seconds between speed samples, so bursts do not jitter the ETA
_STATES_BY_STATUS = {
    "queued": "queued",  # waiting for the daemon to start it (it runs a few pulls at once)
    "success": "done",
    "paused": "paused",
    "cancelled": "cancelled",
}


def download_key(name: str) -> str:
    """How a pull is named in the daemon's list."""
    return name.strip().lower()


@dataclass(frozen=True, slots=True)
class Download:
    name: str
    status: str = ""
    total: int = 0
    completed: int = 0
    state: str = "running"  # queued | running | paused | failed | done | cancelled
    speed: float = 0.0  # bytes per second
    error: str = ""
    kind: str = "download"  # or "import": a file of this computer's, linked or copied in

    @property
    def fraction(self) -> float:
        return min(self.completed / self.total, 1.0) if self.total else 0.0

    @property
    def eta(self) -> float | None:
        if self.state != "running" or self.speed <= 0 or not self.total:
            return None
        return max(self.total - self.completed, 0) / self.speed

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running", "paused")


class Downloads:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._items: dict[str, Download] = {}
        self._layers: dict[str, dict[str, tuple[int, int]]] = {}
        self._sample: dict[str, tuple[float, int]] = {}

    def items(self) -> tuple[Download, ...]:
        return tuple(self._items.values())

    def get(self, name: str) -> Download | None:
        return self._items.get(download_key(name))

    def on_progress(self, p: PullProgress) -> Download:
        """One event of a pull or import stream; layers are summed into one bar."""
        name = download_key(p.name)
        layers = self._layers.setdefault(name, {})
        if p.digest and p.total:
            layers[p.digest] = (p.total, p.completed)
        total = sum(t for t, _ in layers.values())
        completed = sum(c for _, c in layers.values())
        state = _STATES_BY_STATUS.get(p.status, "running")
        if state == "done" and total:
            completed = total
        return self._set(name, p.status, total, completed, state)

    def on_snapshot(
        self, pulls: Sequence[PullStatus], watched: Set[str] = frozenset()
    ) -> list[str]:
        """The daemon's own list: adopt pulls we did not start; trust its totals. Returns the
        active pulls (not ``watched`` by a stream of ours) that left the list: they finished."""
        watched = {download_key(n) for n in watched}
        listed = {download_key(p.name) for p in pulls}
        for p in pulls:
            name = download_key(p.name)
            if name not in watched:
                self._set(name, p.status, p.total, p.completed, p.state, p.error)
        gone = [
            d.name
            for d in self._items.values()
            if d.active and d.name not in listed and d.name not in watched
        ]
        for name in gone:
            current = self._items[name]
            self._items[name] = replace(
                current, state="done", speed=0.0, completed=current.total or current.completed
            )
        return gone

    def mark(self, name: str, state: str, error: str = "", kind: str = "") -> Download:
        name = download_key(name)
        current = self._items.get(name) or Download(name)
        updated = replace(current, state=state, error=error, speed=0.0, kind=kind or current.kind)
        self._items[name] = updated
        self._sample.pop(name, None)
        return updated

    def remove(self, name: str) -> None:
        name = download_key(name)
        self._items.pop(name, None)
        self._layers.pop(name, None)
        self._sample.pop(name, None)

    def clear_finished(self) -> None:
        for name in [n for n, d in self._items.items() if not d.active]:
            self.remove(name)

    def _set(
        self, name: str, status: str, total: int, completed: int, state: str, error: str = ""
    ) -> Download:
        current = self._items.get(name) or Download(name)
        speed = self._speed(name, completed, current.speed) if state == "running" else 0.0
        updated = Download(
            name,
            status or current.status,
            total or current.total,
            max(completed, 0),
            state,
            speed,
            error,
            current.kind,
        )
        self._items[name] = updated
        return updated

    def _speed(self, name: str, completed: int, previous: float) -> float:
        now = self._clock()
        last = self._sample.get(name)
        if last is None or completed < last[1]:
            self._sample[name] = (now, completed)
            return previous
        elapsed = now - last[0]
        if elapsed < _MIN_INTERVAL:
            return previous
        self._sample[name] = (now, completed)
        sample = (completed - last[1]) / elapsed
        return sample if previous <= 0 else _SMOOTHING * sample + (1 - _SMOOTHING) * previous
