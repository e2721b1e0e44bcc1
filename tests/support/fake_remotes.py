"""The stand-in client's remotes (``FakeClient`` inherits them): ``/api/remotes`` as the
daemon answers it, kept in a list, with its 404 and 409."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from localllm.daemon.api.remotes import (
    RemoteAddRequest,
    RemoteInfo,
    RemoteList,
    RemoteModelOut,
    ReplicaInfo,
)
from localllm.daemon.client import Conflict, RemoteNotFound

__all__ = ["FakeRemotes", "remote_info"]


def remote_info(
    name: str, urls: Sequence[str], models: Sequence[str] = (), **fields: Any
) -> RemoteInfo:
    """``/api/remotes``'s entry for a remote whose replicas all answer (1.5 ms) and which
    lists ``models`` (its own ids); ``fields`` replace the defaults."""
    replicas = [ReplicaInfo(url=url, healthy=True, latency_ms=1.5) for url in urls]
    defaults: dict[str, Any] = {
        "kind": "openai",
        "has_api_key": False,
        "timeout_seconds": 600.0,
        "max_concurrency": 16,
        "healthy": True,
        "replicas": replicas,
        "models": [RemoteModelOut(name=f"{name}/{m}", remote_id=m) for m in models],
    }
    return RemoteInfo(name=name, urls=list(urls), **{**defaults, **fields})


@dataclass
class FakeRemotes:
    remote_infos: list[RemoteInfo] = field(default_factory=list)
    calls: list[tuple] = field(default_factory=list)

    def remotes(self) -> RemoteList:
        self.calls.append(("remotes",))
        return RemoteList(remotes=self.remote_infos)

    def add_remote(self, request: RemoteAddRequest) -> RemoteInfo:
        """Like the daemon: a taken name is a 409; the key itself never comes back."""
        self.calls.append(("add_remote", request))
        if any(r.name == request.name for r in self.remote_infos):
            raise Conflict(f"a remote named '{request.name}' exists already", 409)
        fields = request.model_dump(exclude={"name", "urls", "api_key"})
        info = remote_info(request.name, request.urls, has_api_key=bool(request.api_key))
        info = info.model_copy(update=fields)
        self.remote_infos.append(info)
        return info

    def remove_remote(self, name: str) -> None:
        self.calls.append(("remove_remote", name))
        if not any(r.name == name for r in self.remote_infos):
            raise RemoteNotFound(f"no remote named '{name}'", 404)
        self.remote_infos = [r for r in self.remote_infos if r.name != name]
