"""Views on their own, fed plain records: what a tiny test model cannot produce (a reply with
a code block) and what needs no daemon at all (dropping files, a card's download states). The
window over a real daemon is in the ``test_gui_e2e_*`` modules.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QDropEvent, QGuiApplication
from PySide6.QtWidgets import QInputDialog, QLabel, QMessageBox

from localllm.app.gui.design.widgets import page_palette
from localllm.app.gui.item_models.conversations import CONVERSATION_ROLE, ConversationListModel
from localllm.app.gui.item_models.daemon_tables import DownloadsModel
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.downloads import Download
from localllm.app.gui.state.records import GpuInfo, SystemInfo
from localllm.app.gui.views.import_dialog import ask_import_name
from localllm.app.gui.views.plain_text import confirm
from localllm.app.gui.views.sidebar import ChatSidebar
from localllm.app.gui.views.transcript import Transcript
from localllm.app.gui.views.welcome import WelcomePage
from tests.support.qt_text import LINK, links, shown

GB = 1_000_000_000


def test_code_blocks_have_a_copy_link(qtbot):
    transcript = Transcript()
    qtbot.addWidget(transcript)
    reply = Message("r1", "assistant", "Try:\n\n```python\nprint('hi')\n```\n")
    transcript.show_messages((Message("u1", "user", "code please"), reply), "tiny", False)
    assert "print('hi')" in transcript.toPlainText()
    with qtbot.waitSignal(transcript.copied) as copied:
        transcript.anchorClicked.emit(QUrl("copy:r1:0"))
    assert QGuiApplication.clipboard().text() == "print('hi')\n" and copied.args == ["Code copied"]


def test_dropping_a_gguf_on_the_first_run_page_asks_to_import(qtbot, tmp_path):
    page = WelcomePage()
    qtbot.addWidget(page)
    mime = QMimeData()
    mime.setUrls(
        [
            QUrl.fromLocalFile(str(tmp_path / "model.gguf")),
            QUrl.fromLocalFile(str(tmp_path / "notes.txt")),
        ]
    )
    event = QDropEvent(
        QPointF(5, 5),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    with qtbot.waitSignal(page.import_requested) as dropped:
        page.dropEvent(event)
    assert dropped.args[0].name == "model.gguf"


def test_a_card_shows_its_download_and_a_failure_in_place(qtbot):
    page = WelcomePage()
    qtbot.addWidget(page)
    page.set_system(SystemInfo(16 * GB, 8 * GB, (GpuInfo("RTX", 8 * GB, 6 * GB),)))
    assert "16.0 GB RAM" in page.machine.text() and "RTX" in page.machine.text()
    page.show_download(Download("qwen:0.5b", "pulling", 1000, 250, "running"))
    assert page.buttons["qwen:0.5b"].text().startswith("Downloading… 25%")
    page.show_download(Download("qwen:0.5b", state="failed", error="could not reach the hub"))
    assert page.buttons["qwen:0.5b"].isEnabled()
    assert page.buttons["qwen:0.5b"].text() == "Retry download"
    said = page.problems["qwen:0.5b"].text()  # one sentence, with the next step
    assert said.startswith("This computer could not reach Hugging Face") and "import" in said
    assert said.count(". ") == 0 and said.endswith(".")
    page.show_download(Download("qwen:0.5b", "success", 1000, 1000, "done"))
    assert page.problems["qwen:0.5b"].isHidden() and page.buttons["qwen:0.5b"].text() == "Ready"


def _answering(monkeypatch, dialog_class, answer):
    """Answer ``dialog_class``'s next dialog with ``answer``, keeping what its labels showed."""
    seen = []

    def exec_(dialog):
        seen.extend(shown(label) for label in dialog.findChildren(QLabel) if label.text())
        return answer(dialog)

    monkeypatch.setattr(dialog_class, "exec", exec_)
    return seen


def test_confirmations_quote_names_as_text(qtbot, monkeypatch):
    seen = _answering(monkeypatch, QMessageBox, lambda _box: QMessageBox.StandardButton.Yes)
    assert confirm(None, "Delete chat", f"Delete “{LINK}” and all its messages?")
    assert any(LINK in doc.toPlainText() and not links(doc) for doc in seen)


def test_importing_a_file_named_like_a_link_names_it_as_text(qtbot, monkeypatch):
    def accept(dialog):
        dialog.setTextValue("mine")
        return QInputDialog.DialogCode.Accepted

    seen = _answering(monkeypatch, QInputDialog, accept)
    file = Path('<a href="x">click to repair.gguf')  # a downloaded file may be named anything
    assert ask_import_name(None, file) == "mine"
    assert any(file.name in doc.toPlainText() and not links(doc) for doc in seen)


def test_a_tooltip_with_the_daemons_words_is_never_markup(model_tester):
    table = model_tester(DownloadsModel())
    table.replace([Download("qwen:0.5b", status=LINK, state="failed", error="no")])
    state = table.index(0, [c.title for c in table.columns].index("State"))
    tip = table.data(state, Qt.ItemDataRole.ToolTipRole)
    label = QLabel(tip)  # a tooltip is a label with Qt's guess of the format
    assert LINK in shown(label).toPlainText() and links(shown(label)) == []
    plain = Download("qwen:0.5b", status="pulling manifest")
    table.replace([plain])
    assert table.data(state, Qt.ItemDataRole.ToolTipRole) == "pulling manifest"


def test_the_chat_list_highlights_the_chat_opened_elsewhere(qtbot):
    """Opening a chat from outside the list (Chat with it, deleting the open chat) moves the
    highlight to it on screen: the list once moved it with its signals blocked, so the view
    was never told to redraw and kept showing the previous chat as the open one."""
    chats = ConversationListModel()
    for n in range(3):
        chats.add(Conversation(f"c{n}", f"Chat {n}", updated_at=float(n)))
    sidebar = ChatSidebar(chats)
    qtbot.addWidget(sidebar)
    sidebar.resize(240, 300)
    sidebar.show()
    qtbot.waitExposed(sidebar)
    opened: list[str] = []
    sidebar.open_requested.connect(opened.append)
    rows = {chats.index(r, 0).data(CONVERSATION_ROLE).id: r for r in range(3)}
    highlight = QColor(page_palette(sidebar.list).accent_soft).rgb()  # the chosen row's

    def highlighted_on_screen() -> set[str]:
        shot = sidebar.screen().grabWindow(sidebar.winId()).toImage()
        offset = sidebar.list.viewport().mapTo(sidebar, QPoint(0, 0))
        found = set()
        for chat_id, row in rows.items():
            centre = sidebar.list.visualRect(chats.index(row, 0)).center() + offset
            if shot.pixel(centre.x() // 2, centre.y()) == highlight:
                found.add(chat_id)
        return found

    sidebar.select("c0")
    qtbot.waitUntil(lambda: highlighted_on_screen() == {"c0"})
    sidebar.select("c2")
    qtbot.waitUntil(lambda: highlighted_on_screen() == {"c2"})  # redrawn, not left on c0
    assert opened == []  # selecting it did not ask to open it again


def test_the_context_meter_says_the_numbers_alone_where_the_sentence_does_not_fit(qtbot):
    """With the chat settings open at 1,024 px the sentence was cut to "...tokens (3"."""
    from localllm.app.gui.state.chat.context_use import ContextUse
    from localllm.app.gui.state.chat.records import Message as ChatMessage
    from localllm.app.gui.state.chat.stats import ReplyStats
    from localllm.app.gui.views.context_meter import ContextMeter

    meter = ContextMeter()
    qtbot.addWidget(meter)
    counted = ReplyStats(35, 9.0, 0.1, 1.0, prompt_tokens=100, context_tokens=135)
    meter.show_use(ContextUse.of([ChatMessage("r", "assistant", "hi", stats=counted)], 4096))
    meter.resize(420, 30)
    meter.show()
    qtbot.waitUntil(lambda: meter.label.text() == "Context: 135 of 4,096 tokens (3%)")
    meter.resize(240, 30)
    qtbot.waitUntil(lambda: meter.label.text() == "135 of 4,096 (3%)")
    meter.resize(110, 30)
    qtbot.waitUntil(lambda: meter.label.text() == "3%")
    assert "out of the Context length" in meter.toolTip()  # the words are still there
