"""Table cells that carry a meaning ("fits in RAM", "healthy") drawn as badges: a rounded pill
in the tone's soft background with its text in the tone's colour, the same on every page."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from app.gui.design.widgets import page_palette
from app.gui.item_models.table import TONE_ROLE

__all__ = ["BadgeDelegate"]

_PAD_X, _PAD_Y = 8, 3


class BadgeDelegate(QStyledItemDelegate):
    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width() + 2 * _PAD_X + 40, size.height())

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        tone, text = index.data(TONE_ROLE), index.data() or ""
        if not tone or not text:
            return super().paint(painter, option, index)
        plain = QStyleOptionViewItem(option)
        self.initStyleOption(plain, index)
        plain.text = ""
        widget = option.widget
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, plain, painter, widget)
        palette = page_palette(widget) if widget is not None else None
        if palette is None:
            return
        colour, background = palette.tone(tone)
        metrics = option.fontMetrics
        width = min(metrics.horizontalAdvance(text) + 2 * _PAD_X, option.rect.width() - 8)
        height = metrics.height() + 2 * _PAD_Y
        rect = QRectF(
            option.rect.left() + 6, option.rect.center().y() - height / 2 + 1, width, height
        )
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(background))
        painter.drawRoundedRect(rect, height / 2, height / 2)
        painter.setPen(QColor(colour))
        shown = metrics.elidedText(text, Qt.TextElideMode.ElideRight, int(width) - 2 * _PAD_X)
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, shown)
        painter.restore()
