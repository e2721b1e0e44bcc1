"""What a Qt label draws, for tests of text that must never become markup; and when a text
view has laid out all of its document.

Qt draws a label's text as HTML when its format says so, or (the default, ``AutoText``) when
its first line looks like HTML. ``shown`` builds the document by that same rule (the one Qt's
accessibility text for a label uses), so a test sees what the user would: the words, and any
links among them.
"""

from __future__ import annotations

from PySide6 import QtGui
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QLabel, QTextBrowser, QTextEdit, QWidget

__all__ = [
    "LINK",
    "assert_literal",
    "assert_literal_tooltip",
    "click_link",
    "laid_out",
    "links",
    "shown",
]

LINK = '<a href="x">click to repair</a>'  # what a crafted model or hub would like us to draw


def shown(label: QLabel) -> QTextDocument:
    """The document ``label`` draws: its text as HTML if Qt takes it for rich text."""
    return _document(label.text(), label.textFormat())


def _document(text: str, kind: Qt.TextFormat) -> QTextDocument:
    document = QTextDocument()
    rich = kind == Qt.TextFormat.RichText or (
        kind == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text)
    )
    if rich:
        document.setHtml(text)
    else:
        document.setPlainText(text)
    return document


def links(document: QTextDocument) -> list[str]:
    """Every link target in ``document``."""
    return [href for href, _ in _anchors(document)]


def _anchors(document: QTextDocument) -> list[tuple[str, int]]:
    """Each link's target and the position of the middle of its text."""
    found = []
    block = document.begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            if fragment.charFormat().isAnchor():
                middle = fragment.position() + fragment.length() // 2
                found.append((fragment.charFormat().anchorHref(), middle))
            fragments += 1
        block = block.next()
    return found


def click_link(qtbot, browser: QTextBrowser, href: str) -> None:
    """Click the link to ``href`` with the mouse, where the browser draws it."""
    position = next((at for target, at in _anchors(browser.document()) if target == href), None)
    assert position is not None, f"no link to {href!r} in {links(browser.document())}"
    cursor = QTextCursor(browser.document())
    cursor.setPosition(position)
    browser.setTextCursor(cursor)
    browser.ensureCursorVisible()
    point: QPoint = browser.cursorRect(cursor).center()
    qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=point)


def assert_literal(label: QLabel, text: str) -> None:
    """``label`` shows ``text`` word for word, and no link."""
    document = shown(label)
    assert text in document.toPlainText(), document.toPlainText()
    assert links(document) == []


def assert_literal_tooltip(widget: QWidget, text: str) -> None:
    """``widget``'s tooltip (whose format Qt guesses) shows ``text`` word for word, no link."""
    document = _document(widget.toolTip(), Qt.TextFormat.AutoText)
    assert text in document.toPlainText(), document.toPlainText()
    assert links(document) == []


def laid_out(view: QTextEdit) -> bool:
    """Whether ``view``'s scroll bar spans its whole document as laid out at its width now.

    Qt lays a long document out in steps, and again when the width changes; the scroll bar
    follows each step. Asking for the document's size finishes the layout, so a test waits
    for this instead of a guess at how long the steps take (longer on a busy machine).
    """
    height = view.document().documentLayout().documentSize().toSize().height()
    return view.verticalScrollBar().maximum() == max(0, height - view.viewport().height())
