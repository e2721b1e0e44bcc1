"""The pieces every page shares: a banner for notices (dismissible, with actions), a badge,
an empty state that says what to do next, and the helpers that set a design variant.

Colours come from the stylesheet through the ``tone`` and ``kind`` properties; nothing here
names a colour.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE, Palette, palette

__all__ = [
    "Banner",
    "EmptyState",
    "badge",
    "icon_button",
    "page_palette",
    "set_kind",
    "set_tone",
]

_TONE_ICONS = {"info": "info", "success": "ok", "warning": "warning", "danger": "error"}


def _restyle(widget: QWidget, name: str, value: str) -> None:
    widget.setProperty(name, value)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


def set_kind(widget: QWidget, kind: str) -> QWidget:
    """A variant of a control: "primary", "ghost", "danger", "icon", "send", "chip"."""
    _restyle(widget, "kind", kind)
    return widget


def set_tone(widget: QWidget, tone: str) -> None:
    """What a badge, banner or bar means: "success", "warning", "danger", "info", "neutral"."""
    _restyle(widget, "tone", tone)


def page_palette(_widget: QWidget | None = None) -> Palette:
    """The design palette in force (for what paints its own colours), read from the
    application's palette: a widget's own may be transparent under the stylesheet."""
    window = QGuiApplication.palette().color(QPalette.ColorRole.Window)
    return palette(window.lightness() < 128)


def badge(text: str, tone: str = "neutral", tooltip: str = "") -> QLabel:
    label = QLabel(text)
    label.setObjectName("badge")
    label.setToolTip(tooltip)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    set_tone(label, tone)
    return label


def icon_button(icons, icon: str, name: str, tip: str = "", on_click: Callable | None = None):
    """An icon-only button with a screen-reader name and a tooltip (``name`` if none)."""
    button = QToolButton()
    button.setToolTip(tip or name)
    button.setAccessibleName(name)
    button.setAutoRaise(True)
    button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    set_kind(button, "icon")
    if icons is not None:
        button.setIcon(icons.get(icon))
    button.setProperty("icon_name", icon)
    if on_click is not None:
        button.clicked.connect(lambda _checked=False: on_click())
    return button


class Banner(QFrame):
    """One notice: an icon, a sentence (plain text: it may quote a model or a file), buttons
    for what to do about it, and a close button when it may be dismissed. A dismissed notice
    stays away until it has something else to say. ``text``/``setText`` as on a label.
    (``close()`` and ``actions()`` stay QWidget's: the parts have names of their own.)"""

    dismissed = Signal()

    def __init__(self, icons=None, *, dismissible: bool = True, tone: str = "info", parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self._icons = icons
        self._dismissed: set[str] = set()
        self.icon = QLabel()
        self.label = QLabel(wordWrap=True)
        self.label.setObjectName("bannerText")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.label.setMinimumWidth(120)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action_row = QHBoxLayout()
        self.action_row.setSpacing(SPACE.sm)
        self.dismiss_button = icon_button(icons, "close", "Dismiss", on_click=self.dismiss)
        self.dismiss_button.setVisible(dismissible)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.sm)
        row.setSpacing(SPACE.md)
        row.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
        column = QVBoxLayout()
        column.setSpacing(SPACE.sm)
        column.addWidget(self.label)
        column.addLayout(self.action_row)
        row.addLayout(column, 1)
        row.addWidget(self.dismiss_button, 0, Qt.AlignmentFlag.AlignTop)
        self.tone = tone
        set_tone(self, tone)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def setText(self, text: str) -> None:
        self.show_text(text, self.tone)

    def show_text(self, text: str, tone: str = "info") -> None:
        """Say ``text`` (nothing: hide)."""
        if tone != self.tone:
            self.tone = tone
            set_tone(self, tone)
        self.label.setText(text)
        self.setAccessibleName(text)
        self._draw_icon()
        self.setVisible(bool(text))

    def setVisible(self, visible: bool) -> None:
        shown = visible and bool(self.text()) and self.text() not in self._dismissed
        super().setVisible(shown)

    def add_action(self, text: str, on_click: Callable[[], None]) -> QPushButton:
        button = QPushButton(text)
        button.clicked.connect(lambda _checked=False: on_click())
        self.action_row.addWidget(button)
        return button

    def finish_actions(self) -> None:
        self.action_row.addStretch(1)

    def dismiss(self) -> None:
        self._dismissed.add(self.text())
        self.hide()
        self.dismissed.emit()

    def retheme(self) -> None:
        self._draw_icon()
        if self._icons is not None:
            self.dismiss_button.setIcon(self._icons.get("close"))

    def _draw_icon(self) -> None:
        if self._icons is None:
            return
        text, _background = page_palette(self).tone(self.tone)
        size = self.fontMetrics().height()
        self.icon.setPixmap(self._icons.get(_TONE_ICONS[self.tone], text).pixmap(size, size))


class EmptyState(QWidget):
    """What an empty list says: a title and what to do next."""

    def __init__(self, title: str, hint: str, parent=None):
        super().__init__(parent)
        self.title = QLabel(title, wordWrap=True)
        self.title.setObjectName("sectionTitle")
        self.hint = QLabel(hint, wordWrap=True)
        self.hint.setObjectName("muted")
        for label in (self.title, self.hint):
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            label.setTextFormat(Qt.TextFormat.PlainText)
        column = QVBoxLayout(self)
        column.addStretch(1)
        column.addWidget(self.title)
        column.addWidget(self.hint)
        column.addStretch(2)
