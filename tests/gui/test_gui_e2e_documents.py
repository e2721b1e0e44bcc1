"""Chatting with documents in the real app against a real daemon: a folder dropped on the
conversation is indexed with progress, a question goes out with the right passages in the
prompt, the reply cites the right file, and clicking the citation shows the passage. The
attachment and the citations come back when the app is opened again."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from localllm.app.gui.services.documents import OFFERED_MODEL, OFFERED_RERANKER
from tests.documents.files import write_corpus, write_pdf
from tests.gui.test_gui_e2e_chat import _ready, _type_and_send
from tests.support.gui_e2e import GuiDaemon, open_app, tiny_models, wait_idle

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    running = GuiDaemon(tmp_path_factory.mktemp("gui-documents"), tiny_models(tiny_model_path))
    yield running
    running.stop()


def _drop(widget, paths) -> None:
    """Drop files on ``widget`` as a file manager would."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    pos = QPointF(widget.rect().center())
    for kind in (QDropEvent.Type.DragEnter, QDropEvent.Type.Drop):
        if kind == QDropEvent.Type.DragEnter:
            from PySide6.QtGui import QDragEnterEvent

            event = QDragEnterEvent(
                pos.toPoint(),
                Qt.DropAction.CopyAction,
                mime,
                Qt.MouseButton.NoButton,
                Qt.KeyboardModifier.NoModifier,
            )
        else:
            event = QDropEvent(
                pos,
                Qt.DropAction.CopyAction,
                mime,
                Qt.MouseButton.NoButton,
                Qt.KeyboardModifier.NoModifier,
            )
        QApplication.sendEvent(widget, event)
        assert event.isAccepted()


def _href(transcript, prefix: str) -> str:
    html = transcript.toHtml()
    start = html.index(prefix)
    return html[start : html.index('"', start)]


def test_a_folder_is_indexed_and_a_reply_cites_the_right_file(qtbot, daemon, tmp_path):
    folder = write_corpus(tmp_path / "notes")
    write_pdf(
        folder / "turbines.pdf", ["Wind turbine overview", "Blade inspection every 400 hours"]
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    page, documents = window.chat_page, window.services.documents
    seen = []
    documents.progress.connect(lambda _chat, progress: seen.append(progress.done))
    with qtbot.waitSignal(documents.indexed, timeout=60_000) as indexed:
        _drop(page.transcript.viewport(), [folder])
    report = indexed.args[1]
    assert report.indexed == 13 and report.passages >= 13 and len(report.errors) == 1
    assert seen == sorted(seen) and seen[-1] == 14
    bar = page.documents
    assert bar.errors.isVisible() and "broken.pdf" in bar.errors.text()
    assert str(tmp_path) not in bar.errors.text()
    assert "notes" in bar.summary.text() and "keyword search" in bar.summary.text()
    assert bar.offer.isVisible() and OFFERED_MODEL in bar.offer.text()

    _type_and_send(qtbot, window, "How often is each blade inspected?", timeout=60_000)
    reply = services.chat.session.messages[-1]
    assert reply.role == "assistant" and not reply.failed
    assert reply.stats.prompt_tokens > 200  # the passages went into the prompt
    sources = documents.sources(services.chat.session.conversation.id, reply.id)
    assert sources[0].name == "turbines.pdf" and sources[0].page == 2
    href = _href(page.transcript, f"action:source:{reply.id}:1")
    assert "[1] turbines.pdf, page 2, line 1" in page.transcript.toPlainText()

    page.transcript.anchorClicked.emit(QUrl(href))
    dialog = bar.dialog
    assert dialog is not None and dialog.isVisible()
    assert "turbines.pdf" in dialog.heading.text() and "page 2" in dialog.heading.text()
    assert "Blade inspection every 400 hours" in dialog.passage.toPlainText()
    dialog.close()

    with qtbot.waitSignal(services.chat.reply_finished, timeout=60_000):
        page.transcript.anchorClicked.emit(QUrl("action:regenerate"))
    again = services.chat.session.messages[-1]
    assert again.id != reply.id and len(again.versions) == 2
    regenerated = documents.sources(services.chat.session.conversation.id, again.id)
    assert regenerated[0].name == "turbines.pdf"  # searched again for the same question
    wait_idle(qtbot, services)
    chat_id = services.chat.session.conversation.id
    services.shutdown()
    window.close()

    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    qtbot.waitUntil(lambda: services.chat.session is not None, timeout=10_000)
    assert services.chat.session.conversation.id == chat_id
    qtbot.waitUntil(lambda: services.documents.attached(chat_id) == (str(folder.resolve()),))
    qtbot.waitUntil(lambda: "[1] turbines.pdf" in window.chat_page.transcript.toPlainText())
    index = tmp_path / "app" / "documents" / f"{chat_id}.sqlite3"
    assert index.exists()
    services.chat.delete(chat_id)  # the chat's index goes with it
    qtbot.waitUntil(lambda: not index.exists(), timeout=30_000)
    services.shutdown()


def test_without_an_embedding_model_the_bar_offers_one(qtbot, daemon, tmp_path):
    folder = write_corpus(tmp_path / "notes")
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    bar = window.chat_page.documents
    with qtbot.waitSignal(services.documents.indexed, timeout=60_000):
        bar.attach([folder])
    assert services.documents.embed_model == "" and bar.offer.isVisible()
    bar.offer.click()  # a pull of the catalog's nomic-embed-text (it fails here: offline)
    qtbot.waitUntil(lambda: services.downloads.state.get(OFFERED_MODEL) is not None, timeout=30_000)
    services.shutdown()


def test_a_question_in_a_chat_without_documents_has_no_sources(qtbot, daemon, tmp_path):
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    assert "No documents" in window.chat_page.documents.summary.text()
    _type_and_send(qtbot, window, "hello")
    reply = services.chat.session.messages[-1]
    assert services.documents.sources(services.chat.session.conversation.id, reply.id) == ()
    assert "Sources:" not in window.chat_page.transcript.toPlainText()
    services.shutdown()


def test_searching_with_a_picked_model_embeds_through_the_daemon(qtbot, daemon, tmp_path):
    folder = write_corpus(tmp_path / "notes")
    write_pdf(
        folder / "turbines.pdf", ["Wind turbine overview", "Blade inspection every 400 hours"]
    )
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    bar, documents = window.chat_page.documents, services.documents
    with qtbot.waitSignal(documents.indexed, timeout=60_000):
        bar.attach([folder])
    bar.embed_menu.aboutToShow.emit()  # as opening Documents > Search with fills it
    labels = [a.text() for a in bar.embed_menu.actions()]
    assert labels[:2] == ["An embedding model, if one is installed", "Words only"]
    (pick,) = [a for a in bar.embed_menu.actions() if a.text() == "Words and tiny:latest"]
    with qtbot.waitSignal(documents.indexed, timeout=120_000) as indexed:
        pick.trigger()
    assert indexed.args[1].embed_model == "tiny:latest" and indexed.args[1].indexed == 13
    assert "embedded with tiny:latest" in bar.summary.text() and not bar.offer.isVisible()
    assert bar.offer_reranker.isVisible() and "reranked" not in bar.summary.text()
    bar.offer_reranker.click()  # a pull of the catalog's bge-reranker:m3 (it fails: offline)
    qtbot.waitUntil(lambda: services.downloads.state.get(OFFERED_RERANKER) is not None)
    _type_and_send(qtbot, window, "How often is each blade inspected?", timeout=60_000)
    reply = services.chat.session.messages[-1]
    names = [s.name for s in documents.sources(services.chat.session.conversation.id, reply.id)]
    assert "turbines.pdf" in names
    services.shutdown()
