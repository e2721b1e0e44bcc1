"""The documents pieces of the chat view without a daemon: citation links (escaped, since file
names are anyone's), the passage dialog and its Open file, and where the passages go in the
turns sent to the model."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QTextDocument

from localllm.app.gui.state.chat.attachments import SourceRef
from localllm.app.gui.state.chat.context_turns import with_context
from localllm.app.gui.state.gateway import ChatTurn
from localllm.app.gui.views.documents_bar import citations_html
from localllm.app.gui.views.source_dialog import SourceDialog

SOURCE = SourceRef("/docs/<b>bold<i>.md", None, 3, 5, "Inspect each blade every 400 hours.")


def test_citations_are_numbered_links_with_escaped_names():
    html = citations_html("reply-1", (SOURCE, SourceRef("/docs/log.pdf", 2, 1, 1, "x")))
    assert "action:source:reply-1:1" in html and "action:source:reply-1:2" in html
    document = QTextDocument()
    document.setHtml(html)
    text = document.toPlainText()
    assert "[1] <b>bold<i>.md, lines 3-5" in text and "[2] log.pdf, page 2, line 1" in text
    assert citations_html("reply-1", ()) == ""


class _Opened(QObject):
    def __init__(self):
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


def test_the_dialog_shows_the_passage_and_opens_the_file(qtbot, tmp_path):
    path = tmp_path / "manual.md"
    path.write_text("Inspect each blade every 400 hours.")
    dialog = SourceDialog(2, SourceRef(str(path), None, 1, 1, path.read_text()))
    qtbot.addWidget(dialog)
    assert dialog.heading.text() == "[2] manual.md, line 1"
    assert dialog.passage.toPlainText() == "Inspect each blade every 400 hours."
    assert dialog.passage.isReadOnly()
    opened = _Opened()
    QDesktopServices.setUrlHandler("file", opened, "open")
    try:
        dialog.open_button.click()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert [Path(u.toLocalFile()) for u in opened.urls] == [path]


def test_passages_join_the_system_prompt_or_become_it():
    turns = (ChatTurn("system", "Be brief."), ChatTurn("user", "How often?"))
    head, user = with_context(turns, "[1] manual.md: every 400 hours")
    assert head.role == "system" and head.content == "Be brief.\n\n[1] manual.md: every 400 hours"
    assert user == turns[1]
    first, _ = with_context(turns[1:], "[1] ...")
    assert (first.role, first.content) == ("system", "[1] ...")
    assert with_context(turns, "") == turns
