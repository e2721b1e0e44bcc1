"""Tables over ``RecordTableModel``: sortable by value, one row selected at a time."""

from __future__ import annotations

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from localllm.app.gui.item_models.table import SORT_ROLE
from localllm.app.gui.views.badge_delegate import BadgeDelegate

__all__ = ["selected_record", "table_view"]


def table_view(model, parent=None, stretch: int | None = None) -> QTableView:
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


def selected_record(view: QTableView):
    rows = view.selectionModel().selectedRows()
    if not rows:
        return None
    proxy = view.model()
    return proxy.sourceModel().item(proxy.mapToSource(rows[0]).row())
