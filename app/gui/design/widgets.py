"""The pieces every page shares: a banner for notices (dismissible, with actions), a badge,
an empty state that says what to do next, and the helpers that set a design variant.

Colours come from the stylesheet through the ``tone`` and ``kind`` properties; nothing here
names a colour.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QBoxLayout,
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
    "padded_number",
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


def padded_number(box: QAbstractSpinBox) -> QAbstractSpinBox:
    """A number field whose text sits off its left edge as a line edit's does: the
    stylesheet's padding does not reach a spin box's own editor (Qt lays it out from the
    frame's edge), so its editor is given the margin."""
    box.lineEdit().setTextMargins(SPACE.sm, 0, 0, 0)
    return box


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


class _OneLine(QLabel):
    """A label that keeps to one line: its text is cut with "…" to the width it is given (the
    whole of it in the tooltip), and it asks for no width of its own."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._whole = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        self._whole = text
        self.setToolTip(f"<qt>{html.escape(text)}</qt>" if text else "")  # word for word
        self._cut()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._cut()

    def _cut(self) -> None:
        metrics = self.fontMetrics()
        cut = metrics.elidedText(self._whole, Qt.TextElideMode.ElideRight, max(0, self.width()))
        super().setText(cut)


class Banner(QFrame):
    """One notice: an icon, a sentence (plain text: it may quote a model or a file), buttons
    for what to do about it, and a close button when it may be dismissed. A dismissed notice
    stays away until it has something else to say. ``text``/``setText`` as on a label.
    (``close()`` and ``actions()`` stay QWidget's: the parts have names of their own.)

    ``shape``: "card" (the sentence wraps, the buttons in a row under it), "column" (for a
    narrow column: a ``title`` line, the sentence, then the buttons one under another), or
    "line" (a notice that asks for nothing: one quiet line, cut to the width, whole in its
    tooltip)."""

    dismissed = Signal()

    def __init__(
        self,
        icons=None,
        *,
        dismissible: bool = True,
        tone: str = "info",
        shape: str = "card",
        title: str = "",
        parent=None,
    ):
        super().__init__(parent)
        self.setObjectName("noticeLine" if shape == "line" else "banner")
        self._icons = icons
        self._dismissed: set[str] = set()
        self._text = ""
        self._icon_actions: list[QToolButton] = []
        self.shape = shape
        self.setProperty("shape", shape)  # the stylesheet sets a column's text smaller
        self.icon = QLabel()
        self.label = _OneLine() if shape == "line" else QLabel(wordWrap=True)
        self.label.setObjectName("bannerText")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        if shape != "line":
            self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
            self.label.setMinimumWidth(120 if shape == "card" else 0)
        tall = QSizePolicy.Policy.Preferred if shape == "column" else QSizePolicy.Policy.Maximum
        self.setSizePolicy(QSizePolicy.Policy.Preferred, tall)  # a column's text wraps long
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        vertical = QBoxLayout.Direction.TopToBottom
        self.action_row = QBoxLayout(
            vertical if shape == "column" else QBoxLayout.Direction.LeftToRight
        )
        self.action_row.setSpacing(SPACE.sm if shape == "card" else SPACE.xs)
        self.dismiss_button = icon_button(icons, "close", "Dismiss", on_click=self.dismiss)
        self.dismiss_button.setVisible(dismissible)
        self._lay_out(title)
        self.tone = tone
        set_tone(self, tone)
        self.hide()

    def _lay_out(self, title: str) -> None:
        top = QHBoxLayout()
        top.setSpacing(SPACE.sm if self.shape != "card" else SPACE.md)
        align = Qt.AlignmentFlag.AlignVCenter if self.shape != "card" else Qt.AlignmentFlag.AlignTop
        top.addWidget(self.icon, 0, align)
        whole = QVBoxLayout(self)
        whole.setSpacing(SPACE.sm)
        whole.addLayout(top)
        if self.shape == "column":  # narrow: a heading line, then the sentence and the buttons
            heading = QLabel(title)
            heading.setObjectName("bannerTitle")
            heading.setTextFormat(Qt.TextFormat.PlainText)
            top.addWidget(heading, 1)
            whole.addWidget(self.label)
            whole.addLayout(self.action_row)
            whole.setContentsMargins(SPACE.sm, SPACE.sm, SPACE.sm, SPACE.sm)
        else:
            text = QVBoxLayout()
            text.setSpacing(SPACE.sm)
            text.addWidget(self.label)
            top.addLayout(text, 1)
            if self.shape == "card":
                text.addLayout(self.action_row)
                whole.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.sm)
            else:
                whole.setContentsMargins(SPACE.sm, 0, 0, 0)
        top.addWidget(self.dismiss_button, 0, align)
        self._top = top

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        self.show_text(text, self.tone)

    def show_text(self, text: str, tone: str = "info") -> None:
        """Say ``text`` (nothing: hide)."""
        if tone != self.tone:
            self.tone = tone
            set_tone(self, tone)
        self._text = text
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

    def add_icon_action(self, icon: str, name: str, on_click: Callable[[], None]) -> QToolButton:
        """An action as an icon button beside the dismiss button (a narrow column's second)."""
        button = icon_button(self._icons, icon, name, on_click=on_click)
        self._top.insertWidget(self._top.indexOf(self.dismiss_button), button)
        self._icon_actions.append(button)
        return button

    def finish_actions(self) -> None:
        if self.shape == "card":
            self.action_row.addStretch(1)

    def dismiss(self) -> None:
        self._dismissed.add(self.text())
        self.hide()
        self.dismissed.emit()

    def keep_dismissed(self, text: str) -> None:
        """``text`` stays away as if dismissed (a dismissal remembered from an earlier run)."""
        self._dismissed.add(text)
        if self.text() == text:
            self.hide()

    def forget_dismissed(self) -> None:
        """Every notice may be said again (what they were about has changed)."""
        self._dismissed.clear()

    def retheme(self) -> None:
        self._draw_icon()
        if self._icons is not None:
            for button in (self.dismiss_button, *self._icon_actions):
                button.setIcon(self._icons.get(button.property("icon_name")))

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
