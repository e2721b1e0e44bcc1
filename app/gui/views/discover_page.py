"""Discover: the curated catalog, a Hugging Face search for GGUF models, each quant's size and
whether it fits this machine, and a pull.

With the search box empty (or Hugging Face out of reach) the page lists the catalog's models
with their badges (whether each fits, what each can do), filtered by what is typed (every word,
anywhere in a model's name, description or abilities; offline, the search looks only there;
its heading says when nothing matches); typing searches the hub after a short pause, and
picking a repository lists its files, smallest first, each with its badge ("fits in VRAM",
"fits in RAM", "too large") and what it would take in memory. Both are the daemon's memory
plan of the file, read from its header on the hub, asked for the rows on screen only (more as
they scroll into view); until a row's plan has come, its figure is "about" one from its size.
What goes wrong is said in one wrapped line, so no message can widen the window. Offline (the
window's banner says what that means, once) the page offers to import a GGUF file beside the
Download button it turns off.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import set_kind
from localllm.app.gui.item_models.table import SORT_ROLE, RecordTableModel
from localllm.app.gui.services.hub import OFFLINE, HubService
from localllm.app.gui.state.catalog_search import matches
from localllm.app.gui.state.records import CatalogModel, HubFile, SystemInfo
from localllm.app.gui.state.units import bytes_text
from localllm.app.gui.views.plain_text import plain_label
from localllm.app.gui.views.record_table import (
    record_at,
    selected_record,
    sorting_proxy,
    table_view,
)
from localllm.app.gui.views.welcome import OFFLINE_REASON

__all__ = ["DiscoverPage"]

CATALOG, SEARCH = 0, 1
POPULAR = "Popular models, ready to download by name."
_ABOUT = 5  # the catalog's column that takes the room left


def _machine(system: SystemInfo) -> str:
    gpus = ", ".join(f"{g.name} {bytes_text(g.vram_total)}" for g in system.gpus) or "no GPU"
    return f"This computer: {bytes_text(system.ram_total)} RAM · {gpus}"


def visible_records(view: QTableView) -> list:
    """The records of the rows on screen, top to bottom."""
    proxy = sorting_proxy(view)
    if not view.isVisible() or not proxy.rowCount():
        return []
    first = view.rowAt(0)
    last = view.rowAt(view.viewport().height() - 1)
    first, last = max(first, 0), proxy.rowCount() - 1 if last < 0 else last
    return [record_at(view, proxy.index(r, 0)) for r in range(first, last + 1)]


def _wrapped(text: str = "") -> QLabel:
    """A plain-text label that wraps instead of asking for the width of its longest line."""
    label = plain_label(text, objectName="muted", wordWrap=True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


class WordFilter(QSortFilterProxyModel):
    """The catalog's models that have every word of ``query`` (``catalog_search.matches``),
    sorted by value."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.query = ""
        self.setSortRole(SORT_ROLE)

    def set_query(self, query: str) -> None:
        self.beginFilterChange()
        self.query = query
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, row: int, parent: QModelIndex | QPersistentModelIndex) -> bool:
        records = self.sourceModel()
        assert isinstance(records, RecordTableModel), "it filters the catalog's records"
        return matches(records.item(row), self.query)


class DiscoverPage(QWidget):
    pull_requested = Signal(str)
    import_requested = Signal(object)  # None: the file is to be picked

    def __init__(self, hub: HubService, parent=None):
        super().__init__(parent)
        self.hub = hub
        self.query = QLineEdit(
            placeholderText="Search Hugging Face for GGUF models, e.g. qwen",
            clearButtonEnabled=True,
        )
        self.machine = _wrapped()  # GPU names, as the daemon reports them
        self.state = _wrapped()  # the hub's errors
        self.catalog = table_view(hub.catalog, self, stretch=_ABOUT)
        self.catalog_filter = WordFilter(self)
        self.catalog_filter.setSourceModel(hub.catalog)
        sorting_proxy(self.catalog).deleteLater()  # the table's own, filtering one column
        self.catalog.setModel(self.catalog_filter)
        self.catalog.horizontalHeader().setSectionResizeMode(_ABOUT, QHeaderView.ResizeMode.Stretch)
        self.heading = _wrapped(POPULAR)  # or that nothing matches
        self.empty = plain_label(objectName="muted", wordWrap=True)  # what to try then
        self.empty.hide()
        self.catalog.sortByColumn(2, Qt.SortOrder.AscendingOrder)
        self.repos = table_view(hub.repos, self, stretch=0)
        self.files = table_view(hub.files, self)
        self.files.sortByColumn(1, Qt.SortOrder.AscendingOrder)
        self.views = QStackedWidget()
        self.pull_button = QPushButton("Download")
        self.pull_button.setEnabled(False)
        set_kind(self.pull_button, "primary")
        self.import_button = QPushButton("Import a GGUF file…")  # offline, what works
        set_kind(self.import_button, "primary")
        self.import_button.hide()
        self.import_button.clicked.connect(lambda: self.import_requested.emit(None))
        self._checked = False
        self._debounce = QTimer(self, singleShot=True, interval=400)
        self._debounce.timeout.connect(self.search_now)
        self._planner = QTimer(self, singleShot=True, interval=0)  # one pass per burst
        self._planner.timeout.connect(self.plan_visible)
        for view in (self.catalog, self.files):
            view.verticalScrollBar().valueChanged.connect(lambda _v: self._planner.start())
            proxy = view.model()
            for signal in (proxy.rowsInserted, proxy.modelReset, proxy.layoutChanged):
                signal.connect(lambda *_: self._planner.start())
        self.query.textChanged.connect(self._typed)
        self.query.returnPressed.connect(self.search_now)
        self.catalog.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        self.repos.selectionModel().selectionChanged.connect(lambda *_: self._open_repo())
        self.files.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        for view in (self.catalog, self.files):
            view.doubleClicked.connect(lambda _i: self._pull())
        self.pull_button.clicked.connect(self._pull)
        hub.searching.connect(self._searching)
        hub.error.connect(self._problem)
        hub.offline_changed.connect(self._offline)
        hub.system_changed.connect(lambda s: self.machine.setText(_machine(s)))
        self._build()

    def _build(self) -> None:
        catalog = QWidget()
        column = QVBoxLayout(catalog)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.heading)
        column.addWidget(self.catalog, 1)
        column.addWidget(self.empty)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.repos)
        splitter.addWidget(self.files)
        splitter.setSizes([520, 480])
        self.views.addWidget(catalog)
        self.views.addWidget(splitter)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.import_button)
        row.addWidget(self.pull_button)
        layout = QVBoxLayout(self)
        title = QLabel("Discover")
        title.setObjectName("pageTitle")
        layout.addWidget(title)
        layout.addWidget(self.query)
        layout.addWidget(self.machine)
        layout.addWidget(self.state)
        layout.addWidget(self.views, 1)
        layout.addLayout(row)

    def plan_visible(self) -> None:
        """Ask for the memory plans of the rows on screen (each is asked for once)."""
        if self.hub.offline:
            return
        if self._showing_catalog:
            self.hub.plan_catalog([m.name for m in visible_records(self.catalog)])
        else:
            self.hub.plan_files(visible_records(self.files))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._planner.start()

    def retheme(self) -> None:
        self.catalog.viewport().update()
        self.files.viewport().update()

    def search_now(self) -> None:
        self._debounce.stop()
        self._filter_catalog(self.query.text())
        if self.hub.offline and self.query.text().strip():
            self.hub.check_online()  # back online? the next search goes to the hub again
            return
        self.hub.search(self.query.text())

    def _filter_catalog(self, text: str) -> None:
        query = " ".join(text.split())
        self.catalog_filter.set_query(query)
        none = bool(query) and not self.catalog_filter.rowCount()
        self.heading.setText(f"No models match “{query}”." if none else POPULAR)
        self.empty.setText("Try fewer words, or import a GGUF file you have." if none else "")
        self.empty.setVisible(none)
        self.catalog.setVisible(not none)

    def selected(self) -> CatalogModel | HubFile | None:
        """The model the Download button pulls: a catalog row or a repository's file."""
        return selected_record(self.catalog if self._showing_catalog else self.files)

    def selected_file(self) -> HubFile | None:
        return None if self._showing_catalog else selected_record(self.files)

    @property
    def _showing_catalog(self) -> bool:
        return self.views.currentIndex() == CATALOG

    def _typed(self, text: str) -> None:
        self._filter_catalog(text)
        if text.strip():
            self._debounce.start()
        else:
            self._debounce.stop()
            self.hub.search("")
            self._show(CATALOG)
            if not self.hub.offline:
                self.state.clear()

    def _searching(self, busy: bool) -> None:
        if busy:
            self._show(SEARCH)
            self.state.setText("Searching…")
        elif self.state.text() == "Searching…":
            self.state.clear()

    def _problem(self, text: str) -> None:
        self.state.setText(text)
        if self.hub.offline:
            self._show(CATALOG)

    def _offline(self, offline: bool) -> None:
        self._show(CATALOG if offline or not self.query.text().strip() else SEARCH)
        if offline:
            self.state.setText(OFFLINE)
        elif self.state.text() == OFFLINE:
            self.state.clear()
        self._selected()
        self._planner.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._planner.start()
        if not self._checked:  # the first visit: can downloads work at all?
            self._checked = True
            self.hub.check_online()

    def _show(self, view: int) -> None:
        if view != self.views.currentIndex():
            self.views.setCurrentIndex(view)
            self._selected()
            self._planner.start()

    def _open_repo(self) -> None:
        repo = selected_record(self.repos)
        if repo is not None:
            self.hub.open_repo(repo.repo)

    def _selected(self) -> None:
        chosen = self.selected()
        self.pull_button.setEnabled(chosen is not None and not self.hub.offline)
        self.import_button.setVisible(self.hub.offline)
        self.pull_button.setToolTip(OFFLINE_REASON if self.hub.offline else "")
        if isinstance(chosen, HubFile):
            self.pull_button.setText(
                f"Download {chosen.quant or chosen.file} ({bytes_text(chosen.size)})"
            )
        elif chosen is not None:
            self.pull_button.setText(f"Download {chosen.name} ({bytes_text(chosen.size)})")
        else:
            self.pull_button.setText("Download")

    def _pull(self) -> None:
        chosen = self.selected()
        if isinstance(chosen, HubFile):
            self.pull_requested.emit(chosen.name_to_pull)
        elif chosen is not None:
            self.pull_requested.emit(chosen.name)
