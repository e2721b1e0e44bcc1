"""Text from the daemon, a model file or a hub, shown as text and never as markup.

Qt guesses the format of a label's or a message box's text: one whose first line looks like
HTML is rendered, links included, so a GGUF whose architecture is
``<a href="...">click to repair</a>``, or a hub's file name in an error, would show a link.
Every widget here shows such text plain; where the markup around it is ours, the views set
rich text explicitly and ``html.escape`` what they put in it.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QInputDialog,
    QLabel,
    QMessageBox,
    QWidget,
)

__all__ = ["ask_text", "confirm", "plain_label", "plain_tooltip", "rich_label"]


def plain_label(text: str = "", **properties) -> QLabel:
    """A label whose text is never read as HTML."""
    label = QLabel(text, **properties)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def rich_label(text: str = "", **properties) -> QLabel:
    """A label for our own markup; whatever else goes in it must be ``html.escape``-d."""
    label = QLabel(text, **properties)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip shows it: word for word (Qt guesses a tooltip's format too)."""
    return f"<qt>{html.escape(text)}</qt>"


def confirm(
    parent: QWidget, title: str, question: str, action: str = "Yes", keep: str = "No"
) -> bool:
    """Ask a ``question`` (which may quote names) in plain text; True if the user chose
    ``action`` (the button's word: "Delete"). The button that changes nothing (``keep``) is
    the default, so Enter never deletes or spends, and Esc is the same as it."""
    box = QMessageBox(QMessageBox.Icon.NoIcon, title, question, parent=parent)
    box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
    box.button(QMessageBox.StandardButton.Yes).setText(action)
    box.button(QMessageBox.StandardButton.No).setText(keep)
    box.setDefaultButton(QMessageBox.StandardButton.No)
    box.setEscapeButton(QMessageBox.StandardButton.No)
    box.setTextFormat(Qt.TextFormat.PlainText)
    _without_icons(box.buttons())
    return box.exec() == QMessageBox.StandardButton.Yes


def ask_text(parent: QWidget, title: str, prompt: str, text: str = "") -> str | None:
    """A line of text from the user (stripped), or None if cancelled or left empty; the
    ``prompt`` (which may quote a file name) is plain text."""
    dialog = QInputDialog(parent)
    dialog.setWindowTitle(title)
    dialog.setLabelText(prompt)
    dialog.setTextValue(text)
    dialog.setOkButtonText("OK")  # builds its buttons now, so they lose their icons below
    for label in dialog.findChildren(QLabel):
        label.setTextFormat(Qt.TextFormat.PlainText)
    _without_icons(dialog.findChildren(QAbstractButton))
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return dialog.textValue().strip() or None


def _without_icons(buttons) -> None:
    """Words only: some desktops' Qt puts stock pictures on dialog buttons (a green ball on
    Yes, a red one on No) that look like nothing else in the app."""
    for button in buttons:
        button.setIcon(QIcon())
