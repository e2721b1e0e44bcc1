"""Pulling a model into the store: resolve, check space, download and verify, commit.

The order is what keeps the store consistent: every blob of the plan is leased before the
first byte moves, each blob is committed only after its sha256 matched, the config blob is
built from the first model file once it is in the store, and the manifest is written last.
A pull that fails, pauses or is cancelled therefore never leaves a model entry behind; paused
and failed downloads keep their ``.partial`` files so the next pull resumes them. A Whisper
model in CTranslate2 form (:mod:`.ct2`) and a Piper voice (:mod:`.voice`) take the same path,
their small git-kept files first.
"""

from __future__ import annotations

import json
import posixpath
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from localllm.model_registry.digests import Digest
from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.model_config import config_from_gguf
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.pull.catalog import Catalog
from localllm.model_registry.pull.ct2 import check_stored_config, ct2_config
from localllm.model_registry.pull.downloader import BlobDownload
from localllm.model_registry.pull.events import (
    PULLING_MANIFEST,
    SUCCESS,
    WRITING_MANIFEST,
    PullEvent,
    iterate_in_thread,
)
from localllm.model_registry.pull.fetch import BlobSource, DownloadOptions
from localllm.model_registry.pull.git_files import GitFile, fetch_git_file
from localllm.model_registry.pull.partial import PartialState, list_partials
from localllm.model_registry.pull.resolve import PlannedFile, PullPlan, Resolver
from localllm.model_registry.pull.transfers import BlobLock, Outcome, Transfer, TransferRegistry
from localllm.model_registry.pull.voice import check_stored_voice_config, voice_config
from localllm.model_registry.store import (
    BlobRef,
    Layer,
    LayerType,
    Manifest,
    Store,
    ensure_free_space,
)
from localllm.model_registry.store.locking import Lease

__all__ = ["Puller"]

_Events = Generator[PullEvent, None, Outcome]


@dataclass(eq=False)
class _Session:
    """One running pull; ``reason`` is set when someone pauses or cancels it."""

    name: ModelName
    reason: Outcome | None = None


class Puller:
    """Pulls models from Hugging Face (directly or by catalog short name) into one store.

    ``endpoint``, ``token`` and ``catalog_path`` come from the caller's settings (nothing here
    reads the environment). Share one instance per store: it is what lets two pulls of one
    blob share a download. Thread-safe; close it (or use ``with``) to free its connections.
    """

    def __init__(
        self,
        store: Store,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        catalog_path: Path | None = None,
        options: DownloadOptions | None = None,
        progress_interval: float = 0.1,
        http_client: httpx.Client | None = None,
    ):
        self._store = store
        self._token = token
        self._options = options or DownloadOptions()
        self._interval = progress_interval
        self.catalog = Catalog.load(catalog_path)
        self._resolver = Resolver(
            self.catalog, endpoint=endpoint, token=token, timeout=self._options.connect_timeout * 2
        )
        self._owns_client = http_client is None
        self._client = http_client or httpx.Client(
            timeout=self._options.timeout(),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=16),
            headers={"User-Agent": "localllm"},
        )
        self._transfers = TransferRegistry()
        self._sessions: list[_Session] = []
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Puller:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- public operations ------------------------------------------------------------------
    def resolve(self, name: ModelName | str) -> PullPlan:
        """What a pull of ``name`` would fetch (one metadata call, no download)."""
        return self._resolver.resolve(name)

    def source(self, plan: PullPlan, file: PlannedFile | GitFile) -> BlobSource:
        """Where ``file``'s bytes come from, through this puller's connections and token (a
        download's parts, or the range reads of a header: ``hub_headers``)."""
        return BlobSource(
            self._client,
            file.url,
            file.size,
            repo=plan.repo,
            token=self._token,
            timeout=self._options.timeout(),
        )

    def pull(self, name: ModelName | str) -> Iterator[PullEvent]:
        """Pull ``name``, yielding progress; ends with ``success``, ``paused`` or ``cancelled``.

        Failures raise a :class:`~model_registry.errors.RegistryError`. Stopping the iteration
        early pauses the pull (its partial downloads are kept).
        """
        return self._run(_Session(_parse(name)))

    async def apull(self, name: ModelName | str) -> AsyncIterator[PullEvent]:
        """:meth:`pull` as an async iterator; leaving it early (or cancelling) pauses."""
        session = _Session(_parse(name))
        abandon = lambda: self._stop_session(session, Outcome.PAUSED)  # noqa: E731
        async for event in iterate_in_thread(lambda: self._run(session), abandon):
            yield event

    def pause(self, name: ModelName | str) -> bool:
        """Pause the running pulls of ``name``; False if none was running."""
        return self._stop_sessions(_parse(name), Outcome.PAUSED)

    def cancel(self, name: ModelName | str) -> bool:
        """Cancel the running pulls of ``name`` (their partial downloads are deleted), or
        delete what an earlier, paused or interrupted pull of ``name`` left. False if neither.
        """
        name = _parse(name)
        if self._stop_sessions(name, Outcome.CANCELLED):
            return True
        found = False
        for partial in list_partials(self._store.layout.blobs_dir):
            if name.full in partial.names:
                found = self._discard_partial(partial.digest) or found
        return found

    # -- the pipeline -----------------------------------------------------------------------
    def _run(self, session: _Session) -> Iterator[PullEvent]:
        with self._lock:
            self._sessions.append(session)
        try:
            yield PullEvent(PULLING_MANIFEST)
            plan = self._resolver.resolve(session.name)
            self._check_space(plan)
            with self._store.lease(file.digest for file in plan.files) as lease:
                layers = []
                for git_file in plan.git_files:  # small: first, so config.json is checked early
                    if session.reason is not None:
                        yield self._stopped(plan, session.reason)
                        return
                    layers.append(self._fetch_git(plan, lease, git_file))
                    self._check_config(plan, layers[-1])
                    yield PullEvent.pulling(layers[-1].digest, layers[-1].size, layers[-1].size)
                for file in plan.files:
                    outcome = yield from self._fetch(session, plan, file)
                    if outcome is not Outcome.DONE:
                        yield self._stopped(plan, outcome)
                        return
                layers += [_layer(file) for file in plan.files]
                config = self._config(plan, layers)
                yield PullEvent(WRITING_MANIFEST)
                self._commit(plan, lease, config, layers)
            yield PullEvent(SUCCESS)
        finally:
            with self._lock:
                self._sessions.remove(session)

    def _fetch(self, session: _Session, plan: PullPlan, file: PlannedFile) -> _Events:
        if session.reason is not None:
            return session.reason
        if self._store.blobs.exists(file.digest):
            yield PullEvent.pulling(file.digest, file.size, file.size)
            return Outcome.DONE
        transfer = self._transfers.join(file.digest, lambda: self._transfer(plan, file))
        finished = False
        try:
            yield from self._watch(session, transfer)
            finished = transfer.wait(0)
        finally:
            cancel = session.reason is Outcome.CANCELLED
            self._transfers.leave(transfer, stop=not finished, cancel=cancel)
        if session.reason is not None:
            return session.reason
        if transfer.outcome is Outcome.FAILED and transfer.error is not None:
            raise transfer.error
        return transfer.outcome

    def _watch(self, session: _Session, transfer: Transfer) -> Iterator[PullEvent]:
        digest, size = transfer.digest, transfer.size
        shown, shown_at, verifying = -1, 0.0, False
        while session.reason is None:
            finished = transfer.wait(self._interval)
            completed, now = transfer.completed, time.monotonic()
            if completed != shown and (finished or now - shown_at >= self._interval):
                yield PullEvent.pulling(digest, size, completed)
                shown, shown_at = completed, now
            hashing = transfer.verifying or (finished and transfer.downloaded)
            if hashing and not verifying and transfer.outcome in (Outcome.RUNNING, Outcome.DONE):
                if shown != size:
                    yield PullEvent.pulling(digest, size, size)
                    shown = size
                yield PullEvent.verifying(digest, size)
                verifying = True
            if finished:
                return

    def _transfer(self, plan: PullPlan, file: PlannedFile) -> Transfer:
        layout = self._store.layout

        def download() -> BlobDownload:
            return BlobDownload(
                self.source(plan, file),
                file.digest,
                file.size,
                layout.partial_path(file.digest),
                layout.partial_state_path(file.digest),
                self._options,
                names=(plan.name.full,),
            )

        return Transfer(self._store, file.digest, file.size, download)

    def _stopped(self, plan: PullPlan, outcome: Outcome) -> PullEvent:
        if outcome is Outcome.CANCELLED:
            for file in plan.files:
                self._discard_partial(file.digest)
        return PullEvent(outcome.value)

    # -- before and after the downloads -----------------------------------------------------
    def _check_space(self, plan: PullPlan) -> None:
        """Fail before any download if the missing bytes cannot fit on the disk."""
        needed = 0
        for file in plan.files:
            if self._store.blobs.exists(file.digest):
                continue
            state = PartialState.load(self._store.layout.partial_state_path(file.digest), file.size)
            needed += file.size - (state.completed if state else 0)
        needed += sum(file.size for file in plan.git_files)
        ensure_free_space(self._store.layout.blobs_dir, needed, f"pulling {plan.name.display}")

    def _fetch_git(self, plan: PullPlan, lease: Lease, file: GitFile) -> Layer:
        blob = fetch_git_file(self._store, lease, self.source(plan, file), file, self._options)
        kind = LayerType.VOICE if plan.format == "voice" else LayerType.CT2
        return Layer(kind, blob.digest, blob.size, file_name=posixpath.basename(file.path))

    def _check_config(self, plan: PullPlan, layer: Layer) -> None:
        """A folder model's config file, checked once it is in the store (before the large
        files come)."""
        check = check_stored_voice_config if plan.format == "voice" else check_stored_config
        check(self._store, [layer], plan.repo)

    def _config(self, plan: PullPlan, layers: list[Layer]) -> dict[str, object]:
        if plan.format == "ct2":
            return ct2_config(self._store, layers, plan.source(), plan.repo)
        if plan.format == "voice":
            return voice_config(self._store, layers, plan.source(), plan.repo)
        first: dict[LayerType, Path] = {}  # the first file of each layer type
        for file in plan.files:
            first.setdefault(file.layer_type, self._store.blobs.path(file.digest))
        info = read_gguf_info(first[LayerType.MODEL])
        projector = first.get(LayerType.PROJECTOR)
        projector_info = read_gguf_info(projector) if projector else None
        return config_from_gguf(info, plan.source(), projector=projector_info)

    def _commit(
        self, plan: PullPlan, lease: Lease, config: dict[str, object], layers: list[Layer]
    ) -> None:
        raw = json.dumps(config, sort_keys=True).encode()
        blob = self._store.blobs.write_bytes(raw, on_hashed=lease.add)
        if plan.format != "gguf":  # a folder's files: in name order, however they came
            layers = sorted(layers, key=lambda layer: str(layer.file_name))
        manifest = Manifest(BlobRef(blob.digest, blob.size), tuple(layers))
        self._store.write_manifest(plan.name, manifest)

    # -- pause and cancel -------------------------------------------------------------------
    def _stop_sessions(self, name: ModelName, reason: Outcome) -> bool:
        with self._lock:
            sessions = [session for session in self._sessions if session.name == name]
        for session in sessions:
            self._stop_session(session, reason)
        return bool(sessions)

    @staticmethod
    def _stop_session(session: _Session, reason: Outcome) -> None:
        if session.reason is not Outcome.CANCELLED:
            session.reason = reason

    def _discard_partial(self, digest: Digest) -> bool:
        """Delete a partial download unless some pull (here or elsewhere) is running it."""
        layout, lock = self._store.layout, BlobLock(self._store, digest)
        if not lock.acquire(timeout=0):
            return False
        try:
            existed = layout.partial_state_path(digest).exists()
            layout.partial_path(digest).unlink(missing_ok=True)
            layout.partial_state_path(digest).unlink(missing_ok=True)
            return existed
        finally:
            lock.release()


def _layer(file: PlannedFile) -> Layer:
    """The layer of a downloaded file; a folder model's file keeps its name."""
    file_name = posixpath.basename(file.path) if file.layer_type.names_its_file else None
    return Layer(file.layer_type, file.digest, file.size, file_name=file_name)


def _parse(name: ModelName | str) -> ModelName:
    return name if isinstance(name, ModelName) else parse_name(name)
