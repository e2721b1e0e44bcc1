"""The URLs of one remote and how each is doing: healthy or not, its last round trip, the
requests it is serving, and when a replica that failed may be tried again.

Active checks (``catalog``) mark a replica healthy or not; passive ejection takes a replica out
after a request to it fails and keeps it out for a backoff that doubles with each failure in a
row (1 s, 2 s, 4 s ... at most a minute). Requests go to the healthy replica with the fewest
requests in flight (least outstanding requests); each replica serves at most
``max_concurrency`` at once. When every healthy replica is ejected, they are all tried
again rather than none (as Envoy's panic threshold does).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from localllm.daemon.api.remotes import ReplicaInfo

__all__ = ["Replica", "ReplicaSet"]

_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 60.0


@dataclass(slots=True)
class Replica:
    url: str
    healthy: bool = True  # until a check says otherwise: a new remote is tried at once
    latency_ms: float | None = None
    in_flight: int = 0
    error: str | None = None
    failures: int = 0  # in a row
    ejected_until: float = 0.0  # time.monotonic()
    checked: bool = field(default=False)
    answered_at: float = 0.0  # time.monotonic() of the last line a request read from it

    def info(self) -> ReplicaInfo:
        now = time.monotonic()
        until = None
        if self.ejected_until > now:
            wall = time.time() + (self.ejected_until - now)
            until = datetime.fromtimestamp(wall, UTC).isoformat().replace("+00:00", "Z")
        return ReplicaInfo(
            url=self.url,
            healthy=self.healthy and until is None,
            latency_ms=self.latency_ms,
            in_flight=self.in_flight,
            error=self.error,
            ejected_until=until,
        )


class ReplicaSet:
    def __init__(self, urls: tuple[str, ...], max_concurrency: int):
        self.replicas = [Replica(url) for url in urls]
        self.max_concurrency = max_concurrency

    @property
    def in_flight(self) -> int:
        return sum(r.in_flight for r in self.replicas)

    @property
    def healthy(self) -> bool:
        now = time.monotonic()
        return any(r.healthy and now >= r.ejected_until for r in self.replicas)

    def _pool(self, exclude: set[str]) -> list[Replica]:
        """The replicas a request may go to: the healthy ones not passively ejected; when
        every healthy one is ejected, all of them (never eject a whole remote for a blip:
        a single-replica remote stays usable)."""
        now = time.monotonic()
        live = [r for r in self.replicas if r.url not in exclude and r.healthy]
        return [r for r in live if now >= r.ejected_until] or live

    def any_left(self, exclude: set[str]) -> bool:
        """Whether a request that failed on ``exclude`` has somewhere else to go (now, or
        once a busy replica frees a slot)."""
        return bool(self._pool(exclude))

    def pick(self, exclude: set[str]) -> Replica | None:
        """The replica with the fewest requests in flight (below its limit), not one of
        ``exclude``; None when there is none, or all are busy."""
        choices = [r for r in self._pool(exclude) if r.in_flight < self.max_concurrency]
        return min(choices, key=lambda r: r.in_flight) if choices else None

    def busy(self, exclude: set[str]) -> bool:
        """True when every replica a request may go to is at its concurrency limit (wait)."""
        pool = self._pool(exclude)
        return bool(pool) and all(r.in_flight >= self.max_concurrency for r in pool)

    @staticmethod
    def failed(replica: Replica, why: str) -> None:
        """Passive ejection: out for a backoff that doubles with each failure in a row."""
        replica.failures += 1
        backoff = min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** (replica.failures - 1))
        replica.ejected_until = time.monotonic() + backoff
        replica.error = why

    @staticmethod
    def succeeded(replica: Replica) -> None:
        replica.failures = 0
        replica.ejected_until = 0.0
        replica.error = None

    @staticmethod
    def checked(replica: Replica, latency_ms: float | None, error: str | None) -> None:
        """An active check's result: healthy again (ejection lifted) or not."""
        replica.checked = True
        replica.latency_ms = latency_ms
        replica.healthy = error is None
        replica.error = error
        if error is None:
            replica.failures = 0
            replica.ejected_until = 0.0
