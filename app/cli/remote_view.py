"""How ``localllm remote ls`` reads: one row per remote, and with ``-v`` one per replica under
it, as pure functions of the daemon's ``RemoteInfo`` so tests pin the exact text."""

from __future__ import annotations

from collections.abc import Sequence

from localllm.daemon.api.remotes import RemoteInfo, ReplicaInfo

__all__ = ["health_text", "latency_text", "remote_rows"]


def remote_rows(remotes: Sequence[RemoteInfo], verbose: bool = False) -> list[list[str]]:
    rows = []
    for remote in remotes:
        models = [m.name for m in remote.models]
        shown = ", ".join(models) if verbose and models else str(len(models))
        rows.append(
            [
                remote.name,
                health_text(remote),
                latency_text(remote.replicas),
                shown,
                str(remote.in_flight),
            ]
        )
        if verbose:
            rows += [_replica_row(replica) for replica in remote.replicas]
    return rows


def health_text(remote: RemoteInfo) -> str:
    """``healthy``, ``healthy (1/2)`` when some replicas are down, else ``unhealthy: why``."""
    up = sum(replica.healthy for replica in remote.replicas)
    if remote.healthy and up == len(remote.replicas):
        return "healthy"
    if remote.healthy:
        return f"healthy ({up}/{len(remote.replicas)})"
    reason = next((r.error for r in remote.replicas if r.error), None)
    return f"unhealthy: {_one_line(reason)}" if reason else "unhealthy"


def latency_text(replicas: Sequence[ReplicaInfo]) -> str:
    """The fastest healthy replica's last health check, ``-`` when none answered."""
    times = [r.latency_ms for r in replicas if r.healthy and r.latency_ms is not None]
    return _milliseconds(min(times)) if times else "-"


def _replica_row(replica: ReplicaInfo) -> list[str]:
    if replica.healthy:
        health = "healthy"
    else:
        why = _one_line(replica.error) if replica.error else ""
        health = f"unhealthy: {why}" if why else "unhealthy"
        if replica.ejected_until:
            health += f" (ejected until {replica.ejected_until})"
    latency = _milliseconds(replica.latency_ms) if replica.latency_ms is not None else "-"
    return [f"  {replica.url}", health, latency, "", str(replica.in_flight)]


def _milliseconds(value: float) -> str:
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())
