"""The chat's documents, above the composer: attach files or a folder (the Documents menu, or
drop them on the conversation), see indexing progress and which model embeds them, and open the
passages a reply cites.

Drawing and wiring only: ``DocumentsService`` indexes and searches off the UI thread.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from functools import partial
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QMenu,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from localllm.app.documents.context import DocumentContext
from localllm.app.documents.indexer import IndexProgress, IndexReport
from localllm.app.documents.parsing import SUPPORTED_SUFFIXES
from localllm.app.gui.services.documents import OFFERED_MODEL, OFFERED_RERANKER, DocumentsService
from localllm.app.gui.state.chat.transcript_actions import OpenSource, href
from localllm.app.gui.views.file_dialogs import existing_directory, open_file_names
from localllm.app.gui.views.plain_text import plain_label, plain_tooltip
from localllm.app.gui.views.source_dialog import SourceDialog

__all__ = ["DocumentsBar", "citations_html"]

_FILTER = "Documents (" + " ".join(f"*{s}" for s in sorted(SUPPORTED_SUFFIXES)) + ")"


def citations_html(message_id: str, sources) -> str:
    """A reply's numbered sources as links (``OpenSource``)."""
    if not sources:
        return ""
    links = " &nbsp; ".join(
        f"<a href='{href(OpenSource(message_id, n))}'>[{n}] "
        f"{html.escape(s.name)}, {html.escape(s.where)}</a>"
        for n, s in enumerate(sources, start=1)
    )
    return f"<p style='margin-top:0;'><small>Sources: {links}</small></p>"


class DocumentsBar(QWidget):
    def __init__(
        self,
        service: DocumentsService,
        pull: Callable[[str], None],
        models: Callable[[], list[str]] = list,
        parent=None,
    ):
        super().__init__(parent)
        self.service, self._pull, self._models = service, pull, models
        self.chat_id: str | None = None
        self.dialog: SourceDialog | None = None
        self._report: IndexReport | None = None
        self.button = QToolButton()
        self.button.setText("Documents")
        self.button.setToolTip("Chat about your files")
        self.button.setAccessibleName("Documents")
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.button)
        menu.addAction("Attach files…", self._pick_files)
        menu.addAction("Attach a folder…", self._pick_folder)
        self.embed_menu = menu.addMenu("Search with")
        self.embed_menu.aboutToShow.connect(self._fill_embed_menu)
        menu.addSeparator()
        self.reindex_action = menu.addAction("Index again", self._reindex)
        self.detach_action = menu.addAction("Detach all", self._detach)
        self.button.setMenu(menu)
        self.summary = plain_label(objectName="muted")
        self.offer = QPushButton(f"Get {OFFERED_MODEL}")
        self.offer.setToolTip(
            f"Download {OFFERED_MODEL} (about 270 MB) to search by meaning as well as by words"
        )
        self.offer.clicked.connect(lambda: self._pull(OFFERED_MODEL))
        self.offer_reranker = QPushButton(f"Get {OFFERED_RERANKER}")
        self.offer_reranker.setToolTip(
            f"Download {OFFERED_RERANKER} (about 640 MB) to cite the passages that answer, "
            "reordered by a reranker that reads each one with the question"
        )
        self.offer_reranker.clicked.connect(lambda: self._pull(OFFERED_RERANKER))
        self.progress = QProgressBar(textVisible=True)
        self.progress.setMaximumWidth(200)
        self.errors = plain_label(objectName="muted", wordWrap=True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.button)
        row.addWidget(self.summary, 1)
        row.addWidget(self.progress)
        row.addWidget(self.offer)
        row.addWidget(self.offer_reranker)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.errors)
        self.errors.hide()
        self.setAcceptDrops(True)
        service.attachments_changed.connect(self._attachments)
        service.progress.connect(self._progress)
        service.indexed.connect(self._indexed)
        service.failed.connect(self._failed)
        service.embedder_changed.connect(lambda _model: self._refresh())
        service.reranker_changed.connect(lambda _model: self._refresh())
        self._refresh()

    # what the chat page calls

    def set_chat(self, chat_id: str | None) -> None:
        if chat_id == self.chat_id:
            return
        self.chat_id, self._report = chat_id, None
        self._show_error("")
        if chat_id is not None:
            self.service.load(chat_id)
        self._refresh()

    def has_documents(self) -> bool:
        return self.chat_id is not None and bool(self.service.attached(self.chat_id))

    def context_for(self, question: str, budget: int, then: Callable[[DocumentContext], None]):
        self.service.context_for(self.chat_id or "", question, budget, then)

    def citations(self, message_id: str) -> str:
        return citations_html(message_id, self.service.sources(self.chat_id or "", message_id))

    def show_source(self, target: str) -> None:
        """``target`` is "<reply id>:<number>" from a citation link."""
        message_id, _, number = target.rpartition(":")
        sources = self.service.sources(self.chat_id or "", message_id)
        if number.isdigit() and 1 <= int(number) <= len(sources):
            self.dialog = SourceDialog(int(number), sources[int(number) - 1], self)
            self.dialog.show()

    def choose_embedder(self, model: str | None) -> None:
        """Search by ``model``'s embeddings and words ("" words only, None automatic)."""
        self.service.prefer(model, self.chat_id)
        self._refresh()

    def attach(self, paths: list[Path]) -> None:
        if self.chat_id is not None and paths:
            self.service.attach(self.chat_id, paths)

    def watch_drops(self, widget: QWidget) -> None:
        """Files or folders dropped on ``widget`` are attached to the chat."""
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)

    # drag and drop

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not isinstance(event, QDropEvent):  # a drop, or a drag (enter, move) over it
            return super().eventFilter(watched, event)
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove) and _files(event):
            event.acceptProposedAction()
            return True
        if kind == QEvent.Type.Drop and _files(event):
            self.attach(_files(event))
            event.acceptProposedAction()
            return True
        return super().eventFilter(watched, event)

    def dragEnterEvent(self, event) -> None:
        if _files(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        self.attach(_files(event))

    # what the service reports

    def _attachments(self, chat_id: str, _paths) -> None:
        if chat_id == self.chat_id:
            self._refresh()

    def _progress(self, chat_id: str, progress: IndexProgress) -> None:
        if chat_id != self.chat_id:
            return
        self.progress.setRange(0, max(progress.total, 1))
        self.progress.setValue(progress.done)
        self.progress.setFormat(f"{progress.done} of {progress.total} files")
        self.progress.show()
        if progress.current:
            self.summary.setText(f"Indexing {progress.current}…")

    def _indexed(self, chat_id: str, report: IndexReport) -> None:
        if chat_id == self.chat_id:
            self._report = report
            self._refresh()

    def _failed(self, chat_id: str, message: str) -> None:
        if chat_id == self.chat_id:
            self._show_error(message)
            self._refresh()

    def _refresh(self) -> None:
        chat, service = self.chat_id, self.service
        attached = service.attached(chat) if chat else ()
        self.button.setEnabled(chat is not None)
        self.reindex_action.setEnabled(bool(attached))
        self.detach_action.setEnabled(bool(attached))
        indexing = chat in service.busy
        self.progress.setVisible(indexing)
        # nothing attached, nothing going on: the Documents button in the composer is enough
        self.setVisible(bool(attached) or indexing or bool(self.errors.text()))
        offer = not service.embed_model and service.preferred is None
        self.offer.setVisible(bool(attached) and offer)
        self.offer_reranker.setVisible(bool(attached) and not offer and not service.rerank_model)
        if indexing:
            return
        self.summary.setText(self._summary(attached))
        self.summary.setToolTip(plain_tooltip("\n".join(attached)))
        report = self._report
        if report is not None and report.errors:
            count = len(report.errors)
            first = f"{count} file{'s' * (count > 1)} could not be read: {report.errors[0]}"
            self._show_error(first, "\n".join(report.errors))
        elif report is not None:
            self._show_error("")

    def _show_error(self, text: str, details: str = "") -> None:
        self.errors.setText(text)
        self.errors.setToolTip(plain_tooltip(details) if details else "")
        self.errors.setVisible(bool(text))

    def _summary(self, attached: tuple[str, ...]) -> str:
        if not attached:
            return "No documents: attach files or a folder to ask about them."
        names = ", ".join(Path(p).name for p in attached[:3]) + ("…" if len(attached) > 3 else "")
        report = self._report
        counted = f" · {report.passages} passages" if report is not None else ""
        model = self.service.embed_model
        search = f"embedded with {model}" if model else "keyword search (no embedding model)"
        reranker = self.service.rerank_model
        reranked = f" · reranked by {reranker}" if reranker else ""
        return f"{names}{counted} · {search}{reranked}"

    # the menu

    def _fill_embed_menu(self) -> None:
        menu, preferred = self.embed_menu, self.service.preferred
        menu.clear()
        choices = [("An embedding model, if one is installed", None), ("Words only", "")]
        choices += [(f"Words and {name}", name) for name in self._models()]
        for label, model in choices:
            action = menu.addAction(label, partial(self.choose_embedder, model))
            action.setCheckable(True)
            action.setChecked(model == preferred)

    def _pick_files(self) -> None:
        paths, _ = open_file_names(self, "Attach documents", _FILTER)
        self.attach([Path(p) for p in paths])

    def _pick_folder(self) -> None:
        folder = existing_directory(self, "Attach a folder of documents")
        if folder:
            self.attach([Path(folder)])

    def _reindex(self) -> None:
        if self.chat_id is not None:
            self.service.index(self.chat_id)

    def _detach(self) -> None:
        if self.chat_id is not None:
            self.service.detach_all(self.chat_id)


def _files(event: QDropEvent) -> list[Path]:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]
