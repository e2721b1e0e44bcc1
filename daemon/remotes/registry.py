"""``Remotes``: the daemon's remotes, from the remotes file to a generation.

It loads the list at start, keeps it in step with ``/api/remotes``, runs the background checks
(health and model lists), answers listings from the cache, and routes jobs whose model names a
remote (``NAME/<id>`` or an alias) to it.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry

from localllm.daemon.api.remotes import RemoteAddRequest, RemoteInfo, RemoteList
from localllm.daemon.errors import BadRequestError, ConflictError, NotFoundError
from localllm.daemon.inference.generation import Finished, primed
from localllm.daemon.inference.jobs import (
    Embeddings,
    EmbedJob,
    GenerationJob,
    Rerankings,
    RerankJob,
)
from localllm.daemon.remotes.backend import RemoteBackend
from localllm.daemon.remotes.calls import remote_stream
from localllm.daemon.remotes.catalog import refresh
from localllm.daemon.remotes.config import RemoteConfig, RemotesFile
from localllm.daemon.remotes.embeddings import remote_embeddings
from localllm.daemon.remotes.generation import RemoteGeneration
from localllm.daemon.remotes.keys import RemoteKeys
from localllm.daemon.remotes.loops import check_no_local_clash, check_not_self, checked_config
from localllm.daemon.remotes.rerank import remote_rerank
from localllm.daemon.remotes.state import RemoteState
from localllm.daemon.remotes.stats import RemoteStats
from localllm.daemon.remotes.transcription import remote_transcription
from localllm.daemon.settings import Settings
from localllm.model_registry.store import Store

__all__ = ["RemoteMatch", "Remotes"]

log = logging.getLogger("localllm.remotes")
_FIRST_CHECK_WAIT = 5.0  # seconds an add waits for the first model list


@dataclass(frozen=True, slots=True)
class RemoteMatch:
    remote: RemoteState
    remote_id: str


class Remotes:
    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry,
        use_keyring: bool = True,
        store: Store | None = None,
    ):
        self._settings = settings
        self._store = store  # the local models, whose names a remote must not take
        self._file = RemotesFile(settings.config_dir)
        self._keys = RemoteKeys(settings.config_dir, settings.environment, use_keyring)
        self._remotes: dict[str, RemoteState] = {}
        self._broken = False
        self._adding: set[str] = set()  # names taken by an add still storing its key
        self._writes = asyncio.Lock()  # one remotes-file write at a time, in order
        self._client: httpx.AsyncClient | None = None
        self.stats = RemoteStats(registry, lambda: list(self._remotes.values()))
        self._load()

    def _load(self) -> None:
        try:
            configs = self._file.load()
        except (OSError, ValueError, TypeError, KeyError) as error:
            log.error("the remotes file is unreadable (%s); remotes are off", type(error).__name__)
            self._broken = True
            return
        for config in configs:
            self._remotes[config.name] = RemoteState.of(config, self._key(config))

    def _key(self, config: RemoteConfig) -> str | None:
        return self._keys.key(config.name, config.api_key_env)

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:  # made in the event loop that uses it; never reads proxies
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
            self._client = httpx.AsyncClient(trust_env=False, limits=limits, timeout=None)
        return self._client

    # -- the background checks ---------------------------------------------------------------
    async def run(self) -> None:
        """Check every remote now and then, for as long as the daemon runs."""
        while True:
            await asyncio.gather(*(self._refresh(r) for r in list(self._remotes.values())))
            await asyncio.sleep(self._settings.remote_check_interval)

    async def _refresh(self, remote: RemoteState) -> None:
        try:
            await refresh(self.client, remote)
        except Exception:  # a check must never stop the others
            log.exception("checking remote %s failed", remote.name)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    # -- /api/remotes ------------------------------------------------------------------------
    def list(self) -> RemoteList:
        return RemoteList(remotes=[r.info() for r in self._remotes.values()])

    async def add(self, request: RemoteAddRequest) -> RemoteInfo:
        if self._broken:
            raise BadRequestError("the remotes file is unreadable; fix or remove it first")
        config = checked_config(request)
        check_not_self(config.urls, self._settings)
        if config.name in self._remotes or config.name in self._adding:
            raise ConflictError(f"a remote named {config.name!r} already exists")
        if self._store is not None:  # reads every manifest: off the loop
            await asyncio.to_thread(check_no_local_clash, config, self._store)
        self._adding.add(config.name)
        try:  # a system keyring may block (it may even ask to be unlocked): off the loop
            if request.api_key:
                await asyncio.to_thread(self._keys.store, config.name, request.api_key)
                config = replace(config, has_stored_key=True)
            remote = RemoteState.of(config, await asyncio.to_thread(self._key, config))
            self._remotes[config.name] = remote
        finally:
            self._adding.discard(config.name)
        await self._save()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._refresh(remote)), _FIRST_CHECK_WAIT)
        return remote.info()

    async def remove(self, name: str) -> None:
        if name not in self._remotes:
            raise NotFoundError(f"no remote named {name[:40]!r}")
        remote = self._remotes.pop(name)
        if remote.config.has_stored_key:
            await asyncio.to_thread(self._keys.forget, name)
        await self._save()

    async def _save(self) -> None:
        """The remotes as they are now, written off the loop; writes never overtake each other."""
        async with self._writes:
            await asyncio.to_thread(self._file.save, [r.config for r in self._remotes.values()])

    # -- routing ----------------------------------------------------------------------------
    def match(self, model: str) -> RemoteMatch | None:
        for remote in self._remotes.values():
            remote_id = remote.remote_id(model)
            if remote_id is not None:
                return RemoteMatch(remote, remote_id)
        return None

    def backend(
        self, found: RemoteMatch, on_finished: Callable[[str, Finished], None] | None
    ) -> RemoteBackend:
        """The backend for a request whose model ``found`` matched."""
        return RemoteBackend(self, found, on_finished)

    def refuse_local_work(self, model: str, what: str) -> None:
        """A clear 400 for store work (pull, delete, copy, create) on a remote's model."""
        found = self.match(model)
        if found is not None:
            raise BadRequestError(
                f"{model!r} is served by remote {found.remote.name!r}; {what} works on local "
                "models only",
                param="model",
            )

    async def generate(
        self, found: RemoteMatch, model: str, job: GenerationJob,
        on_finished: Callable[[str, Finished], None] | None,
    ) -> RemoteGeneration:  # fmt: skip
        remote = found.remote
        items = remote_stream(self.client, self.stats, remote, job, found.remote_id)
        remote.in_use[model] += 1
        generation = RemoteGeneration(
            model, remote.name, items, on_finished=on_finished,
            on_closed=lambda: remote.in_use.subtract([model]),
        )  # fmt: skip
        return await primed(generation)

    async def embed(self, found: RemoteMatch, job: EmbedJob) -> Embeddings:
        return await remote_embeddings(self.client, found.remote, job, found.remote_id, job.model)

    async def rerank(self, found: RemoteMatch, job: RerankJob) -> Rerankings:
        return await remote_rerank(self.client, found.remote, job, found.remote_id)

    def transcription(
        self,
        found: RemoteMatch,
        path: str,
        fields: Sequence[tuple[str, str]],
        audio: Path,
        filename: str,
    ) -> AbstractAsyncContextManager[httpx.Response]:
        """The remote's response to a transcription form (``remote_transcription``)."""
        named = [("model", found.remote_id), *fields]
        return remote_transcription(self.client, found.remote, path, named, audio, filename)

    # -- listings (from the cache, never the network) ---------------------------------------
    def models(self) -> builtins.list[tuple[str, str]]:
        """(listed name, remote name) of every remote model."""
        return [(m.name, r.name) for r in self._remotes.values() for m in r.listed()]

    def in_use(self) -> builtins.list[tuple[str, str, int]]:
        """(model, remote, requests) of the remote models serving requests now."""
        return [
            (model, r.name, count)
            for r in self._remotes.values()
            for model, count in r.in_use.items()
            if count > 0
        ]
