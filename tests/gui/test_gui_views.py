"""Views on their own, fed plain records: what a tiny test model cannot produce (a reply with
a code block) and what needs no daemon at all (dropping files, a card's download states). The
window over a real daemon is in the ``test_gui_e2e_*`` modules.
"""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication

from app.gui.state.chat.records import Message
from app.gui.state.downloads import Download
from app.gui.state.records import GpuInfo, SystemInfo
from app.gui.views.transcript import Transcript
from app.gui.views.welcome import WelcomePage

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
