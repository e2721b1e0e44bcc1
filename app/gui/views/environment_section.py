"""The Settings page's "Environment" section: every daemon setting (``daemon.settings``, the
one declaration the daemon parses and the docs' table comes from), its value in this app's
environment and what it does, so nobody has to read the docs to learn what can be set.

The values are those of the app's own environment, which is what a daemon the app starts
runs with; a daemon started elsewhere (a service, another shell) may run with others.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from localllm.daemon.settings import SettingRow

__all__ = ["EnvironmentSection"]

_NOTE = (
    "Set before the daemon starts, as environment variables (Configuration in the docs). "
    "The values are this app's, which a daemon it starts uses; hover one for what it does."
)


class EnvironmentSection(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        note = QLabel(_NOTE)
        note.setWordWrap(True)
        note.setObjectName("muted")
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("Environment variables")
        self.tree.setHeaderLabels(["Variable", "Value"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setMinimumHeight(240)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(note)
        column.addWidget(self.tree)

    def show_rows(self, rows: Sequence[SettingRow]) -> None:
        """One branch per group, a variable set in the environment marked "(set)"."""
        self.tree.clear()
        groups: dict[str, QTreeWidgetItem] = {}
        for row in rows:
            group = groups.get(row.group)
            if group is None:
                group = groups[row.group] = QTreeWidgetItem(self.tree, [row.group])
                group.setFirstColumnSpanned(True)
            value = f"{row.value}  (set)" if row.given else row.value
            item = QTreeWidgetItem(group, [row.name, value])
            for column in (0, 1):
                item.setToolTip(column, row.help)
        self.tree.resizeColumnToContents(0)
