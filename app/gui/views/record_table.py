"""Tables over ``RecordTableModel``: sortable by value, one row selected at a time."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from localllm.app.gui.item_models.table import SORT_ROLE, RecordTableModel
from localllm.app.gui.views.badge_delegate import BadgeDelegate

__all__ = ["record_at", "selected_record", "sorting_proxy", "table_view"]


def table_view(model: RecordTableModel, parent=None, stretch: int | None = None) -> QTableView:
    """A sortable, row-selecting table over a ``RecordTableModel``, without grid lines, its
    meaningful columns drawn as badges; column ``stretch`` (else the last) takes the room the
    others leave."""
    proxy = QSortFilterProxyModel(parent)
    proxy.setSourceModel(model)
    proxy.setSortRole(SORT_ROLE)
    view = QTableView(parent)
    view.setModel(proxy)
    view.setSortingEnabled(True)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setShowGrid(False)
    view.setWordWrap(False)  # one line per row; long text ends in "…"
    view.verticalHeader().hide()
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 18)
    view.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft)
    view.horizontalHeader().setHighlightSections(False)
    for number, column in enumerate(getattr(model, "columns", ())):
        if column.drawn_as_badges:
            view.setItemDelegateForColumn(number, BadgeDelegate(view))
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header = view.horizontalHeader()
    if stretch is None:
        header.setStretchLastSection(True)
    else:
        header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return view


def sorting_proxy(view: QTableView) -> QSortFilterProxyModel:
    """The proxy a ``table_view`` sorts (and may filter) its records through."""
    proxy = view.model()
    assert isinstance(proxy, QSortFilterProxyModel), "a table_view's model is its sorting proxy"
    return proxy


def record_at(view: QTableView, index: QModelIndex | QPersistentModelIndex) -> Any:
    """The record on the row of ``index``, an index of the ``table_view``'s proxy."""
    proxy = sorting_proxy(view)
    records = proxy.sourceModel()
    assert isinstance(records, RecordTableModel), "a table_view shows a RecordTableModel"
    return records.item(proxy.mapToSource(index).row())


def selected_record(view: QTableView):
    rows = view.selectionModel().selectedRows()
    if not rows:
        return None
    return record_at(view, rows[0])
