"""A table of frozen records, kept in step with fresh snapshots by key.

Pages poll the daemon (installed models, running models, downloads); replacing the whole model
on every poll would drop the selection and the scroll position, so ``replace`` works out the
rows that went, came and changed, and emits exactly those signals.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from PySide6 import QtGui
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

__all__ = ["BADGES_ROLE", "ITEM_ROLE", "SORT_ROLE", "TONE_ROLE", "Column", "RecordTableModel"]

SORT_ROLE = Qt.ItemDataRole.UserRole
ITEM_ROLE = Qt.ItemDataRole.UserRole + 1
TONE_ROLE = Qt.ItemDataRole.UserRole + 2  # a badge's meaning: "success", "warning", "danger"
BADGES_ROLE = Qt.ItemDataRole.UserRole + 3  # several badges: ((text, tone), ...)
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    text: Callable[[Any], str]
    sort: Callable[[Any], Any] | None = None  # defaults to the text
    numeric: bool = False  # right-aligned
    tooltip: Callable[[Any], str] | None = None
    tone: Callable[[Any], str | None] | None = None  # drawn as a badge of this meaning
    badges: Callable[[Any], tuple[tuple[str, str], ...]] | None = None  # drawn as badges
    about: str = ""  # the heading's tooltip (what a short title stands for)

    @property
    def drawn_as_badges(self) -> bool:
        return self.tone is not None or self.badges is not None


class RecordTableModel(QAbstractTableModel):
    """Subclasses set ``columns``; rows are records identified by ``key(record)``."""

    columns: tuple[Column, ...] = ()

    def __init__(self, key: Callable[[Any], Hashable], parent=None):
        super().__init__(parent)
        self._key = key
        self._items: list[Any] = []

    # reading

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 - Qt's own signature
        return 0 if parent.isValid() else len(self._items)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.columns[section].title
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.columns[section].about or None
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        item, column = self._items[index.row()], self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.text(item)
        if role == SORT_ROLE:
            return column.sort(item) if column.sort else column.text(item)
        if role == ITEM_ROLE:
            return item
        if role == Qt.ItemDataRole.TextAlignmentRole and column.numeric:
            return int(_RIGHT.value)
        if role == Qt.ItemDataRole.ToolTipRole and column.tooltip:
            return _never_markup(column.tooltip(item))
        if role == TONE_ROLE and column.tone:
            return column.tone(item)
        if role == BADGES_ROLE and column.badges:
            return column.badges(item)
        return None

    def items(self) -> tuple[Any, ...]:
        return tuple(self._items)

    def item(self, row: int) -> Any:
        return self._items[row]

    def row_of(self, key: Hashable) -> int | None:
        return next((i for i, it in enumerate(self._items) if self._key(it) == key), None)

    # writing

    def replace(self, items: Iterable[Any]) -> None:
        """Become ``items``, emitting removes, inserts and changes rather than a reset."""
        new = list(items)
        new_keys = [self._key(it) for it in new]
        if len(set(new_keys)) != len(new_keys):
            raise ValueError("records must have distinct keys")
        for row in reversed(range(len(self._items))):
            if self._key(self._items[row]) not in new_keys:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._items[row]
                self.endRemoveRows()
        kept = [self._key(it) for it in self._items]
        if kept != [k for k in new_keys if k in set(kept)]:
            self.beginResetModel()  # reordered: rare, so keep it simple
            self._items = new
            self.endResetModel()
            return
        for row, item in enumerate(new):
            if row >= len(self._items) or self._key(self._items[row]) != new_keys[row]:
                self.beginInsertRows(QModelIndex(), row, row)
                self._items.insert(row, item)
                self.endInsertRows()
            elif self._items[row] != item:
                self._items[row] = item
                self._changed(row)

    def upsert(self, item: Any) -> None:
        row = self.row_of(self._key(item))
        if row is None:
            self.beginInsertRows(QModelIndex(), len(self._items), len(self._items))
            self._items.append(item)
            self.endInsertRows()
        elif self._items[row] != item:
            self._items[row] = item
            self._changed(row)

    def remove(self, key: Hashable) -> None:
        row = self.row_of(key)
        if row is not None:
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._items[row]
            self.endRemoveRows()

    def _changed(self, row: int) -> None:
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.columns) - 1))


def _never_markup(tip: str) -> str:
    """A tooltip as text: Qt renders one that looks like HTML (a pull's status is the
    daemon's text), so such a one goes as escaped HTML."""
    return QtGui.Qt.convertFromPlainText(tip) if QtGui.Qt.mightBeRichText(tip) else tip
