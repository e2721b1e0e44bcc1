"""Table cells that carry a meaning ("fits in RAM", "healthy", what a model can do) drawn as
badges: rounded pills in the tone's soft background with their text in the tone's colour, the
same on every page. A cell holds one badge (``TONE_ROLE``: its text and tone) or several
(``BADGES_ROLE``: (text, tone) pairs, side by side)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from localllm.app.gui.design.widgets import page_palette
from localllm.app.gui.item_models.table import BADGES_ROLE, TONE_ROLE

__all__ = ["BadgeDelegate"]

_PAD_X, _PAD_Y = 8, 3
_GAP = 4  # between two badges
_MARGIN = 6  # before the first
_EDGE_ALPHA = 60  # of 255


def _badges(index: QModelIndex | QPersistentModelIndex) -> tuple[tuple[str, str], ...]:
    several = index.data(BADGES_ROLE)
    if several:
        return tuple(several)
    tone, text = index.data(TONE_ROLE), index.data() or ""
    return ((text, tone),) if tone and text else ()


def _width(metrics: QFontMetrics, badges) -> int:
    pills = sum(metrics.horizontalAdvance(text) + 2 * _PAD_X for text, _tone in badges)
    return pills + _GAP * max(0, len(badges) - 1)


class BadgeDelegate(QStyledItemDelegate):
    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        size = super().sizeHint(option, index)
        badges = _badges(index)
        if not badges:
            return size
        return QSize(_width(option.fontMetrics, badges) + 2 * _MARGIN + 8, size.height())

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        badges = _badges(index)
        if not badges:
            return super().paint(painter, option, index)
        plain = QStyleOptionViewItem(option)
        self.initStyleOption(plain, index)
        plain.text = ""
        widget = option.widget
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, plain, painter, widget)
        if widget is None:
            return
        palette = page_palette(widget)
        metrics = option.fontMetrics
        height = metrics.height() + 2 * _PAD_Y
        top = option.rect.center().y() - height / 2 + 1
        left, right = option.rect.left() + _MARGIN, option.rect.right() - _MARGIN
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(option.font)  # the font ``metrics`` measures
        for text, tone in badges:
            room = right - left
            if room < 2 * _PAD_X + metrics.horizontalAdvance("…"):
                break  # no room for another: the tooltip and the text say them all
            natural = metrics.horizontalAdvance(text) + 2 * _PAD_X
            width = min(natural, room)
            rect = QRectF(left, top, width, height)
            colour, background = palette.tone(tone)
            edge = QColor(colour)
            edge.setAlpha(_EDGE_ALPHA)  # a hint of an edge: the pill shows on a chosen row too
            painter.setPen(QPen(edge, 1))
            painter.setBrush(QColor(background))
            painter.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), height / 2, height / 2)
            painter.setPen(QColor(colour))
            if width < natural:  # (eliding at the natural width cuts: advances round down)
                text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, width - 2 * _PAD_X)
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
            left += width + _GAP
        painter.restore()
