"""Views on their own, fed plain records: what a tiny test model cannot produce (a reply with
a code block) and what needs no daemon at all (dropping files, a card's download states). The
window over a real daemon is in the ``test_gui_e2e_*`` modules.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication
from PySide6.QtWidgets import QInputDialog, QLabel, QMessageBox

from app.gui.item_models.daemon_tables import DownloadsModel
from app.gui.state.chat.records import Message
from app.gui.state.downloads import Download
from app.gui.state.records import GpuInfo, SystemInfo
from app.gui.views.import_dialog import ask_import_name
from app.gui.views.plain_text import confirm
from app.gui.views.transcript import Transcript
from app.gui.views.welcome import WelcomePage
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
    assert page.problems["qwen:0.5b"].text() == "could not reach the hub"
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
