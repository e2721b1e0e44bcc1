"""How the chat list draws a chat: its title on a rounded row, a section title above the first
chat of each day group ("Today", "Yesterday", ...), and a "more" button at the row's end while
the pointer is on it (or it is the chosen one), which opens its menu (rename, export, delete)."""

from __future__ import annotations

import time

from PySide6.QtCore import (
    QAbstractItemModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QMouseEvent, QPainter
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from localllm.app.gui.design.tokens import RADIUS, TYPE
from localllm.app.gui.design.widgets import page_palette
from localllm.app.gui.item_models.conversations import CONVERSATION_ROLE
from localllm.app.gui.state.chat.day_groups import day_group

__all__ = ["ChatListDelegate"]

_ROW = 10  # vertical padding of a row, in pixels
_MORE = 24  # the more button's side


class ChatListDelegate(QStyledItemDelegate):
    menu_requested = Signal(QModelIndex, object)  # the chat, where to open its menu (QPoint)

    def __init__(self, icons=None, parent=None, clock=time.time):
        super().__init__(parent)
        self._icons, self._clock = icons, clock

    def section(self, index: QModelIndex | QPersistentModelIndex) -> str:
        """The section title drawn above this row ("" when it continues the one above)."""
        conversation = index.data(CONVERSATION_ROLE)
        if conversation is None:
            return ""
        now = self._clock()
        mine = day_group(conversation.updated_at, now)
        if index.row() == 0:
            return mine
        above = index.model().index(index.row() - 1, 0).data(CONVERSATION_ROLE)
        return "" if above is not None and day_group(above.updated_at, now) == mine else mine

    def _header(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> int:
        return option.fontMetrics.height() + 16 if self.section(index) else 0

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        height = option.fontMetrics.height() + 2 * _ROW
        return QSize(120, height + self._header(option, index))

    def row_rect(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QRect:
        return option.rect.adjusted(0, self._header(option, index), 0, 0)

    def more_rect(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QRect:
        row = self.row_rect(option, index)
        return QRect(row.right() - _MORE - 4, row.center().y() - _MORE // 2, _MORE, _MORE)

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        p = page_palette(option.widget) if option.widget is not None else None
        if p is None:
            return super().paint(painter, option, index)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        title = self.section(index)
        if title:
            font = painter.font()
            font.setPointSizeF(TYPE.small)
            font.setWeight(font.Weight.DemiBold)
            painter.setFont(font)
            painter.setPen(QColor(p.muted))
            top = option.rect.adjusted(8, 8, 0, 0)
            painter.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, title)
            painter.setFont(option.font)
        row = self.row_rect(option, index)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        hovered = bool(option.state & QStyle.StateFlag.State_MouseOver)
        if selected or hovered:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(p.accent_soft if selected else p.hover))
            painter.drawRoundedRect(row, RADIUS.md, RADIUS.md)
        more = self.more_rect(option, index)
        room = row.adjusted(10, 0, -(_MORE + 10) if hovered or selected else -10, 0)
        text = option.fontMetrics.elidedText(
            str(index.data() or ""), Qt.TextElideMode.ElideRight, room.width()
        )
        painter.setPen(QColor(p.text))
        painter.drawText(room, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
        if (hovered or selected) and self._icons is not None:
            self._icons.get("more", p.muted).paint(painter, more.adjusted(4, 4, -4, -4))
        painter.restore()

    def editorEvent(
        self,
        event: QEvent,
        model: QAbstractItemModel,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> bool:
        if (
            event.type() == QEvent.Type.MouseButtonRelease
            and isinstance(event, QMouseEvent)
            and self.more_rect(option, index).contains(event.position().toPoint())
        ):
            view = option.widget
            assert isinstance(view, QAbstractScrollArea), "the chat list's view draws its rows"
            self.menu_requested.emit(
                index, view.viewport().mapToGlobal(self.more_rect(option, index).bottomLeft())
            )
            return True
        return super().editorEvent(event, model, option, index)

    def updateEditorGeometry(
        self,
        editor: QWidget,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        editor.setGeometry(self.row_rect(option, index).adjusted(4, 2, -4, -2))
