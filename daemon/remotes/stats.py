"""``/metrics`` per remote: requests, errors, latency, time to first token (counted as they
happen), and in-flight requests and replica health (read at scrape time, never stale)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from localllm.daemon.remotes.state import RemoteState

__all__ = ["RemoteStats"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 600)


class RemoteStats:
    def __init__(self, registry: CollectorRegistry, remotes: Callable[[], Iterable[RemoteState]]):
        r = registry
        self.requests = Counter(
            "localllm_remote_requests", "Requests sent to remotes", ["remote"], registry=r
        )
        self.errors = Counter(
            "localllm_remote_errors", "Failed remote requests", ["remote", "stage"], registry=r
        )
        self.seconds = Histogram(
            "localllm_remote_request_seconds", "Remote request duration", ["remote"],
            buckets=_BUCKETS, registry=r,
        )  # fmt: skip
        self.ttft = Histogram(
            "localllm_remote_time_to_first_token_seconds", "Remote request to first token",
            ["remote"], buckets=_BUCKETS, registry=r,
        )  # fmt: skip
        registry.register(_Gauges(remotes))


class _Gauges:
    def __init__(self, remotes: Callable[[], Iterable[RemoteState]]):
        self._remotes = remotes

    def collect(self) -> Iterator[GaugeMetricFamily]:
        in_flight = GaugeMetricFamily(
            "localllm_remote_in_flight", "Requests running on a remote", labels=["remote"]
        )
        healthy = GaugeMetricFamily(
            "localllm_remote_replica_healthy", "1 if a replica is healthy", labels=["remote", "url"]
        )
        latency = GaugeMetricFamily(
            "localllm_remote_replica_latency_seconds",
            "The last health check's round trip",
            labels=["remote", "url"],
        )
        for remote in self._remotes():
            in_flight.add_metric([remote.name], remote.replicas.in_flight)
            for replica in remote.replicas.replicas:
                info = replica.info()
                healthy.add_metric([remote.name, replica.url], 1.0 if info.healthy else 0.0)
                if replica.latency_ms is not None:
                    latency.add_metric([remote.name, replica.url], replica.latency_ms / 1000)
        yield from (in_flight, healthy, latency)
