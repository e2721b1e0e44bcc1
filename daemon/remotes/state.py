"""One remote as the daemon holds it: its settings, its replicas, its cached model list and
the models in use right now."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from localllm.daemon.api.remotes import RemoteInfo, RemoteModelOut
from localllm.daemon.remotes.config import RemoteConfig
from localllm.daemon.remotes.replicas import ReplicaSet

__all__ = ["RemoteState"]


@dataclass(slots=True)
class RemoteState:
    config: RemoteConfig
    key: str | None  # sent as a bearer token; never shown
    replicas: ReplicaSet
    model_ids: tuple[str, ...] = ()  # the last list the remote gave
    in_use: Counter[str] = field(default_factory=Counter)  # listed model name -> requests
    freed: asyncio.Condition = field(default_factory=asyncio.Condition)  # a slot came free

    @classmethod
    def of(cls, config: RemoteConfig, key: str | None) -> RemoteState:
        return cls(config, key, ReplicaSet(config.urls, config.max_concurrency))

    @property
    def name(self) -> str:
        return self.config.name

    def listed(self) -> list[RemoteModelOut]:
        """Every model as clients name it: ``NAME/<id>``, then the aliases."""
        out = [RemoteModelOut(name=f"{self.name}/{i}", remote_id=i) for i in self.model_ids]
        out += [RemoteModelOut(name=a, remote_id=i) for a, i in self.config.aliases.items()]
        return out

    def remote_id(self, model: str) -> str | None:
        """The remote's id for ``model`` if ``model`` names one of this remote's."""
        if model in self.config.aliases:
            return self.config.aliases[model]
        prefix = f"{self.name}/"
        return (
            model[len(prefix) :] if model.startswith(prefix) and len(model) > len(prefix) else None
        )

    def info(self) -> RemoteInfo:
        c = self.config
        return RemoteInfo(
            name=c.name,
            urls=list(c.urls),
            kind=c.kind,
            has_api_key=self.key is not None,
            api_key_env=c.api_key_env,
            aliases=dict(c.aliases),
            timeout_seconds=c.timeout_seconds,
            max_concurrency=c.max_concurrency,
            healthy=self.replicas.healthy,
            replicas=[r.info() for r in self.replicas.replicas],
            models=self.listed(),
            in_flight=self.replicas.in_flight,
        )
