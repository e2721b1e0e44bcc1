"""Settings for tools through MCP: the servers (add, paste an mcp.json, edit, remove, turn on
or off), each one's status and tools, the tools always allowed, and whether models must call a
tool first. With no server yet, the page says how to add one; the buttons that act on a server
are on only while one is selected.

A server's tool names and descriptions are its own, untrusted text: shown as plain text.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import EmptyState
from localllm.app.gui.services.chat_tools import ChatTools
from localllm.app.gui.state.mcp_json import McpJsonError, servers_from_mcp_json
from localllm.app.gui.views.mcp_server_dialog import McpServerDialog
from localllm.app.gui.views.plain_text import plain_label
from localllm.app.tools.servers import ServerConfig

__all__ = ["ToolsPage"]

_ABOUT = (
    "Tools let a model act: read files, search, call services. They come from MCP servers: "
    "programs on this computer (run with your rights) or addresses you trust. Models that can "
    "call tools are offered the tools of the servers turned on here; each call waits for your "
    "Approve unless you chose Always allow for that tool."
)


class ToolsPage(QWidget):
    def __init__(self, tools: ChatTools, parent: QWidget | None = None):
        super().__init__(parent)
        self._tools = tools
        title = QLabel("Tools (MCP servers)")
        title.setObjectName("pageTitle")
        about = QLabel(_ABOUT, wordWrap=True)
        about.setObjectName("muted")
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["Server", "Command or URL", "Status"])
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.itemChanged.connect(self._toggled)
        self.table.itemSelectionChanged.connect(self._show_tools)
        self.table.doubleClicked.connect(lambda _i: self._edit())
        buttons = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for text, slot in (
            ("Add…", self._add),
            ("Paste mcp.json…", self._paste),
            ("Edit…", self._edit),
            ("Remove", self._remove),
            ("Check now", self._check),
        ):
            button = QPushButton(text)
            button.clicked.connect(slot)
            buttons.addWidget(button)
            self.buttons[text] = button
        buttons.addStretch(1)
        self.problem = plain_label(objectName="problem", wordWrap=True)
        self.problem.hide()
        self.empty = EmptyState(
            "No MCP servers yet",
            "Add… one by its command or URL, or paste the mcp.json of Claude Desktop, Cursor or "
            "LM Studio: their servers are added here, turned on.",
        )
        self.tool_list = QPlainTextEdit(readOnly=True)
        self.tool_list.setPlaceholderText("Pick a server and Check now to see its tools.")
        self.require = QCheckBox(
            "Make models call a tool first in each answer (for models that do not on their own)"
        )
        self.require.toggled.connect(self._require_toggled)
        self.allowed = QLabel()
        forget = QPushButton("Ask again for every tool")
        forget.clicked.connect(self._forget_allowed)
        trust = QHBoxLayout()
        trust.addWidget(self.allowed, 1)
        trust.addWidget(forget)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(about)
        layout.addLayout(buttons)
        layout.addWidget(self.problem)
        layout.addWidget(self.table, 2)
        layout.addWidget(self.empty, 2)
        layout.addWidget(QLabel("Tools of the selected server:"))
        layout.addWidget(self.tool_list, 1)
        layout.addWidget(self.require)
        layout.addLayout(trust)
        tools.changed.connect(self.refresh)
        self.refresh()

    # what the buttons do (also called by tests)

    def add(self, server: ServerConfig) -> None:
        settings = self._tools.settings
        if settings.server(server.name) is not None:
            raise ValueError(f"there is already a server named {server.name!r}")
        self._tools.save(settings.with_servers((*settings.servers, server)))

    def change(self, name: str, server: ServerConfig) -> None:
        servers = self._tools.settings.servers
        self._tools.save(
            self._tools.settings.with_servers(server if s.name == name else s for s in servers)
        )

    def remove(self, name: str) -> None:
        servers = [s for s in self._tools.settings.servers if s.name != name]
        self._tools.save(self._tools.settings.with_servers(servers))

    def refresh(self) -> None:
        settings = self._tools.settings
        selected = self._selected()
        self.table.blockSignals(True)
        self.table.setRowCount(len(settings.servers))
        for row, server in enumerate(settings.servers):
            name = QTableWidgetItem(server.name)
            name.setFlags(name.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            name.setCheckState(Qt.CheckState.Checked if server.enabled else Qt.CheckState.Unchecked)
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, QTableWidgetItem(server.where))
            status = self._tools.status.get(server.name, "")
            self.table.setItem(row, 2, QTableWidgetItem(status or "Starts when a chat needs it"))
            if server.name == selected:
                self.table.selectRow(row)
        self.table.blockSignals(False)
        self.table.resizeColumnsToContents()
        self.table.setVisible(bool(settings.servers))
        self.empty.setVisible(not settings.servers)
        self.require.blockSignals(True)
        self.require.setChecked(settings.require_call)
        self.require.blockSignals(False)
        count = len(settings.allowed)
        self.allowed.setText(
            f"{count} tool{'s' * (count != 1)} always allowed" if count else "Every call asks first"
        )
        self._show_tools()

    # internals

    def _selected(self) -> str:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        item = self.table.item(rows[0].row(), 0) if rows else None
        return item.text() if item is not None else ""

    def _show_tools(self) -> None:
        name = self._selected()
        for text in ("Edit…", "Remove", "Check now"):
            self.buttons[text].setEnabled(bool(name))
        settings = self._tools.settings
        server = settings.server(name)
        lines = [
            f"{t.name}{'  (always allowed)' if server and settings.is_allowed(server, t) else ''}\n"
            f"    {t.description.strip() or '(no description)'}"
            for t in self._tools.tools_of(name)
        ]
        self.tool_list.setPlainText("\n".join(lines))

    def _toggled(self, item: QTableWidgetItem) -> None:
        server = self._tools.settings.server(item.text()) if item.column() == 0 else None
        if server is not None:
            on = item.checkState() == Qt.CheckState.Checked
            self.change(server.name, server.with_enabled(on))

    def _add(self) -> None:
        dialog = McpServerDialog(parent=self)
        if dialog.exec() and dialog.server is not None:
            try:
                self.add(dialog.server)
            except ValueError as exc:
                self._tools.error.emit(str(exc))

    def paste(self, text: str) -> list[str]:
        """Add the servers of a pasted mcp.json (the names already here are left alone);
        returns the names added. Raises McpJsonError with what is wrong."""
        settings = self._tools.settings
        new = [s for s in servers_from_mcp_json(text) if settings.server(s.name) is None]
        if new:
            self._tools.save(settings.with_servers((*settings.servers, *new)))
        return [s.name for s in new]

    def _paste(self) -> None:
        text, ok = QInputDialog.getMultiLineText(
            self, "Paste mcp.json", "The contents of an mcp.json (its mcpServers are added):"
        )
        if not ok or not text.strip():
            return
        try:
            added = self.paste(text)
        except McpJsonError as error:
            self.problem.setText(str(error))
            self.problem.show()
            return
        self.problem.hide()
        if not added:
            self._tools.error.emit("Those servers are here already.")

    def _edit(self) -> None:
        server = self._tools.settings.server(self._selected())
        if server is None:
            return
        dialog = McpServerDialog(server, parent=self)
        if dialog.exec() and dialog.server is not None:
            self.change(server.name, dialog.server)

    def _remove(self) -> None:
        if self._selected():
            self.remove(self._selected())

    def _check(self) -> None:
        server = self._tools.settings.server(self._selected())
        if server is not None:
            self._tools.refresh(server)

    def _require_toggled(self, on: bool) -> None:
        self._tools.save(replace(self._tools.settings, require_call=on))

    def _forget_allowed(self) -> None:
        self._tools.save(replace(self._tools.settings, allowed=frozenset()))
