"""Documents attached to chats: indexing them off the UI thread with progress, finding the
passages a question needs, and remembering which sources each reply was given.

Each chat's documents form one collection, indexed into its own SQLite file under the app's
data directory (``documents/<chat id>.sqlite3``). Indexing runs on a pool of one thread, so runs
queue in order and never overlap; searching opens its own connection on the network pool.
The embedding model is the first installed model the daemon says embeds; with none, search is
keyword-only and the page offers to download ``OFFERED_MODEL``. The reranker is the first
installed model the daemon says reranks; with one, the passages found are reordered by it
before the best are cited, and without one the page offers ``OFFERED_RERANKER``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from localllm.app.documents.context import DocumentContext, build_context
from localllm.app.documents.embedder import DaemonEmbedder
from localllm.app.documents.index import DocumentIndex
from localllm.app.documents.indexer import Indexer, IndexProgress, IndexReport
from localllm.app.documents.reranker import DaemonReranker
from localllm.app.documents.retrieval import Retriever
from localllm.app.gui.state.chat.attachments import AttachmentStore, SourceRef
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.gateway_calls import GatewayError
from localllm.app.gui.workers import Workers

__all__ = ["OFFERED_MODEL", "OFFERED_RERANKER", "DocumentsService"]

OFFERED_MODEL = "nomic-embed-text"  # in the catalog: 137M, F16, about 270 MB
OFFERED_RERANKER = "bge-reranker:m3"  # in the catalog: 568M, Q8_0, about 640 MB
PASSAGES = 5


class DocumentsService(QObject):
    attachments_changed = Signal(str, object)  # chat id, tuple[str, ...] of files and folders
    progress = Signal(str, object)  # chat id, IndexProgress
    indexed = Signal(str, object)  # chat id, IndexReport
    failed = Signal(str, str)  # chat id, what went wrong
    embedder_changed = Signal(str)  # the model that embeds, "" for keyword-only search
    reranker_changed = Signal(str)  # the model that reranks the passages found, "" for none
    sources_changed = Signal(str)  # chat id: its replies' sources were read or added

    def __init__(
        self,
        gateway: Gateway,
        net: Workers,
        disk: Workers,
        db_path: Path,
        index_dir: Path,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._net, self._disk = gateway, net, disk
        self._db_path, self._index_dir = db_path, index_dir
        self._indexing = Workers(max_threads=1, parent=self)
        self._store: AttachmentStore | None = None  # opened on the disk worker
        self._attached: dict[str, tuple[str, ...]] = {}
        self._sources: dict[str, dict[str, tuple[SourceRef, ...]]] = {}
        self._pending: dict[str, tuple[SourceRef, ...]] = {}  # for the reply about to start
        self._capabilities: dict[str, frozenset[str]] = {}  # model name -> what it can do
        self.embed_model = ""
        self.rerank_model = ""
        self.preferred: str | None = None  # the user's pick: None automatic, "" words only
        self.busy: set[str] = set()  # chats being indexed

    # attachments

    def attached(self, chat_id: str) -> tuple[str, ...]:
        return self._attached.get(chat_id, ())

    def load(self, chat_id: str) -> None:
        """Read a chat's documents and sources, then bring its index up to date."""
        self._disk.call(
            lambda: (self._db().documents(chat_id), self._db().sources(chat_id)),
            lambda found: self._loaded(chat_id, found[0], found[1], reindex=True),
            lambda exc: self.failed.emit(chat_id, str(exc)),
        )

    def attach(self, chat_id: str, paths: list[Path]) -> None:
        names = [str(Path(p).resolve()) for p in paths]

        def attach_them() -> list[str]:
            self._db().attach(chat_id, names)
            return self._db().documents(chat_id)

        self._disk.call(
            attach_them,
            lambda found: self._loaded(chat_id, found, None, reindex=True),
            lambda exc: self.failed.emit(chat_id, str(exc)),
        )

    def detach_all(self, chat_id: str) -> None:
        self._disk.call(
            lambda: self._db().detach_all(chat_id),
            lambda _: self._loaded(chat_id, [], None, reindex=True),
        )

    def index(self, chat_id: str) -> None:
        sources = [Path(p) for p in self.attached(chat_id)]
        self.busy.add(chat_id)
        self._indexing.stream(
            lambda: self._index_run(chat_id, sources),
            lambda event: self._event(chat_id, event),
            lambda _: self.busy.discard(chat_id),
            lambda exc: self._index_failed(chat_id, exc),
        )

    def forget(self, chat_id: str) -> None:
        """A deleted chat's index goes with it (its rows in the history go by cascade); after
        any indexing run already queued, which would otherwise write it again."""
        self._attached.pop(chat_id, None)
        self._sources.pop(chat_id, None)
        self._pending.pop(chat_id, None)
        path = self._index_path(chat_id)
        self._indexing.call(lambda: _remove_index(path))

    def prefer(self, model: str | None, chat_id: str | None = None) -> None:
        """Embed with ``model`` ("" for words only, None to pick automatically) from now on;
        ``chat_id``'s index is rebuilt with it."""
        self.preferred = model
        if chat_id is not None and self.attached(chat_id):
            self.index(chat_id)

    def models_changed(self) -> None:
        """Models were added or removed: look for an embedding model and a reranker again
        next time."""
        self._capabilities.clear()

    # questions and citations

    def context_for(
        self,
        chat_id: str,
        question: str,
        budget_tokens: int,
        then: Callable[[DocumentContext], None],
    ) -> None:
        """The passages for ``question`` as a prompt block (empty without documents)."""
        if not self.attached(chat_id):
            then(DocumentContext("", ()))
            return

        def found(searched: tuple[DocumentContext, str]) -> None:
            context, reranker = searched
            self._pending[chat_id] = tuple(SourceRef.of(p) for p in context.sources)
            self._set_reranker(reranker)
            then(context)

        def failed(error: Exception) -> None:  # say why, and ask without passages
            self.failed.emit(chat_id, f"Could not search the documents: {error}")
            then(DocumentContext("", ()))

        def search() -> tuple[DocumentContext, str]:
            passages, reranker = self._search(chat_id, question)
            return build_context(passages, budget_tokens), reranker

        self._net.call(search, found, failed)

    def reply_started(self, chat_id: str, reply_id: str) -> None:
        """The reply that the last passages were for has begun: they are its sources."""
        sources = self._pending.pop(chat_id, ())
        if not sources:
            return
        self._sources.setdefault(chat_id, {})[reply_id] = sources
        self._disk.call(lambda: self._db().save_sources(chat_id, reply_id, sources))
        self.sources_changed.emit(chat_id)

    def sources(self, chat_id: str, message_id: str) -> tuple[SourceRef, ...]:
        return self._sources.get(chat_id, {}).get(message_id, ())

    def shutdown(self) -> None:
        self._indexing.shutdown(wait_ms=500)
        self._disk.call(self._close_db)  # after the writes already queued

    def wait(self, wait_ms: int) -> bool:
        """Until no indexing runs (at most ``wait_ms``); False if one still does."""
        return self._indexing.wait(wait_ms)

    def _close_db(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # internals (the ones named _run or _search run on worker threads)

    def _db(self) -> AttachmentStore:
        if self._store is None:
            self._store = AttachmentStore(self._db_path)
        return self._store

    def _index_path(self, chat_id: str) -> Path:
        return self._index_dir / f"{chat_id}.sqlite3"

    def _loaded(self, chat_id: str, documents, sources, reindex: bool) -> None:
        self._attached[chat_id] = tuple(documents)
        if sources is not None:
            self._sources[chat_id] = dict(sources)
            self.sources_changed.emit(chat_id)
        self.attachments_changed.emit(chat_id, self._attached[chat_id])
        if reindex and (documents or self._index_path(chat_id).exists()):
            self.index(chat_id)

    def _choose_embedder(self) -> str:
        """The user's pick while it is installed, else the first installed model whose
        capabilities say it embeds ("" for none)."""
        models = self._gateway.models()
        if self.preferred == "" or self.preferred in {m.name for m in models}:
            return self.preferred
        return self._first_that("embedding", models)

    def _first_that(self, capability: str, models=None) -> str:
        """The first installed model with ``capability`` ("" for none)."""
        for model in self._gateway.models() if models is None else models:
            known = self._capabilities.get(model.name)
            if known is None:  # asked once per model (cleared when models change)
                known = frozenset(self._gateway.details(model.name).capabilities)
                self._capabilities[model.name] = known
            if capability in known:
                return model.name
        return ""

    def _embedder(self, model: str) -> DaemonEmbedder | None:
        return DaemonEmbedder(model, self._gateway.embed) if model else None

    def _index_run(self, chat_id: str, sources: list[Path]) -> Iterator[object]:
        model = self._choose_embedder()
        yield ("model", model)
        yield ("reranker", self._first_that("rerank"))
        index = DocumentIndex(self._index_path(chat_id))
        try:
            yield from Indexer(index, self._embedder(model)).run(sources)
        finally:
            index.close()

    def _search(self, chat_id: str, question: str):
        """The passages for ``question``, and the reranker that ordered them ("" for none)."""
        index = DocumentIndex(self._index_path(chat_id))
        try:
            embedder = self._embedder(index.embed_model)
            reranker = self._first_that("rerank")
            ranks = DaemonReranker(reranker, self._gateway.rerank) if reranker else None
            try:
                return Retriever(index, embedder, ranks).search(question, PASSAGES), reranker
            except GatewayError:  # a model is gone or failing: keywords still work
                return Retriever(index).search(question, PASSAGES), ""
        finally:
            index.close()

    def _event(self, chat_id: str, event: object) -> None:
        if isinstance(event, IndexProgress):
            self.progress.emit(chat_id, event)
        elif isinstance(event, IndexReport):
            self.busy.discard(chat_id)
            self.indexed.emit(chat_id, event)
        elif isinstance(event, tuple) and event[0] == "model" and event[1] != self.embed_model:
            self.embed_model = event[1]
            self.embedder_changed.emit(self.embed_model)
        elif isinstance(event, tuple) and event[0] == "reranker":
            self._set_reranker(event[1])

    def _set_reranker(self, model: str) -> None:
        if model != self.rerank_model:
            self.rerank_model = model
            self.reranker_changed.emit(model)

    def _index_failed(self, chat_id: str, error: Exception) -> None:
        self.busy.discard(chat_id)
        self.failed.emit(chat_id, f"Indexing stopped: {error}")


def _remove_index(path: Path) -> None:
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        file.unlink(missing_ok=True)
