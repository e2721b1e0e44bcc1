"""Remotes as the app shows them: frozen records of ``/api/remotes``, how their health reads,
and the Add dialog's fields turned into the daemon's request.

Qt-free so the words and the checks are tested without widgets. The API key a user types goes
to the daemon, which keeps it in the keyring (never in its remotes file); only whether a remote
has one comes back.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from localllm.daemon.api.remotes import RemoteAddRequest, RemoteInfo

__all__ = [
    "KEY_IN_ENV",
    "KEY_IN_KEYRING",
    "NO_KEY",
    "RemoteStatus",
    "ReplicaStatus",
    "add_request",
    "remote_status",
]

NO_KEY, KEY_IN_KEYRING, KEY_IN_ENV = "none", "keyring", "env"


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    url: str
    healthy: bool
    latency_ms: float | None = None
    in_flight: int = 0
    error: str = ""


@dataclass(frozen=True, slots=True)
class RemoteStatus:
    name: str
    kind: str
    replicas: tuple[ReplicaStatus, ...]
    models: tuple[str, ...]  # as clients name them: "NAME/<model id>" or an alias
    healthy: bool
    in_flight: int = 0
    key: str = ""  # where its API key comes from, in words ("" when it has none)

    @property
    def urls_text(self) -> str:
        return ", ".join(replica.url for replica in self.replicas)

    @property
    def health_text(self) -> str:
        """``healthy``, ``healthy (1 of 2)``, or ``unreachable: <why>``."""
        up = sum(replica.healthy for replica in self.replicas)
        if self.healthy:
            return "healthy" if up == len(self.replicas) else f"healthy ({up} of {len(self)})"
        reason = next((replica.error for replica in self.replicas if replica.error), "")
        if reason.lower().startswith("unreachable"):  # the daemon's words say it already
            return reason
        return f"unreachable: {reason}" if reason else "unreachable"

    @property
    def latency_text(self) -> str:
        """The fastest healthy replica's last round trip."""
        times = [r.latency_ms for r in self.replicas if r.healthy and r.latency_ms is not None]
        if not times:
            return ""
        best = min(times)
        return f"{best:.1f} ms" if best < 10 else f"{best:.0f} ms"

    @property
    def models_text(self) -> str:
        return ", ".join(self.models) if self.models else "none listed yet"

    def __len__(self) -> int:
        return len(self.replicas)


def remote_status(info: RemoteInfo) -> RemoteStatus:
    replicas = tuple(
        ReplicaStatus(
            url=r.url,
            healthy=r.healthy,
            latency_ms=r.latency_ms,
            in_flight=r.in_flight,
            error=" ".join((r.error or "").split()),
        )
        for r in info.replicas
    )
    if info.api_key_env:
        key = f"from ${info.api_key_env}"
    else:
        key = "in the keyring" if info.has_api_key else ""
    return RemoteStatus(
        name=info.name,
        kind=info.kind,
        replicas=replicas,
        models=tuple(model.name for model in info.models),
        healthy=info.healthy,
        in_flight=info.in_flight,
        key=key,
    )


def add_request(
    name: str, urls_text: str, kind: str, key_source: str = NO_KEY, key: str = ""
) -> RemoteAddRequest:
    """The Add dialog's fields as the daemon's request. ``urls_text`` holds one URL or more
    (spaces, commas or lines between them); ``key`` is the API key itself (kept in the
    keyring) or the name of an environment variable, after ``key_source``. Raises
    ``ValueError`` saying what to fix; the daemon checks the name and URLs again."""
    urls = urls_text.replace(",", " ").split()
    if not name.strip():
        raise ValueError("Give the remote a name: its models are called NAME/<model id>.")
    if not urls:
        raise ValueError("Give at least one URL, like http://gpu-box:8000.")
    bad = next((url for url in urls if not url.startswith(("http://", "https://"))), None)
    if bad is not None:
        raise ValueError(f"'{bad}' is not an http:// or https:// URL.")
    fields: dict = {"name": name.strip(), "urls": urls, "kind": kind}
    key = key.strip()
    if key_source != NO_KEY and not key:
        what = "API key" if key_source == KEY_IN_KEYRING else "environment variable's name"
        raise ValueError(f"Type the {what}, or choose no key.")
    if key_source == KEY_IN_KEYRING:
        fields["api_key"] = key
    elif key_source == KEY_IN_ENV:
        fields["api_key_env"] = key
    try:
        return RemoteAddRequest(**fields)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise ValueError(f"{where}: {first.get('msg', 'invalid')}") from None
