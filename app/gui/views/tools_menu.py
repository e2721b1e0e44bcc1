"""The composer's Tools button: which MCP servers' tools a model that calls tools is offered,
chosen where the message is written.

The choice is the Tools page's (servers turned on or off, and "call a tool first"), shared by
every chat; this menu turns them on and off in place, says whether the chat's model calls tools
at all, and leads to the Tools page to add or edit a server. The button counts the servers on.
Menu items are plain text in Qt; server and model names are validated (no "&" to underline).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QMenu, QToolButton

from localllm.app.gui.services.chat_tools import ChatTools

__all__ = ["ToolsButton"]


class ToolsButton(QToolButton):
    manage_requested = Signal()  # "Add or edit servers…": the Tools page

    def __init__(self, tools: ChatTools, icons=None, parent=None):
        super().__init__(parent)
        self.setText("Tools")
        self.setAccessibleName("Tools")
        self._tools = tools
        self._model = ""  # the chat's
        self._calls_tools: bool | None = None  # whether its model calls tools; None: not known yet
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        if icons is not None:
            self.setIcon(icons.get("tools"))
        self._icons = icons
        self.setMenu(QMenu(self))
        self.menu().aboutToShow.connect(self._fill)
        tools.changed.connect(self._count)
        self._count()

    def set_model(self, name: str, calls_tools: bool | None) -> None:
        """The chat's model and whether it calls tools (None: not known yet)."""
        self._model, self._calls_tools = name, calls_tools
        self._count()

    def retheme(self) -> None:
        if self._icons is not None:
            self.setIcon(self._icons.get("tools"))

    def _count(self) -> None:
        on = len(self._tools.settings.enabled())
        self.setText(f"Tools · {on}" if on else "Tools")
        if self._calls_tools is False:
            tip = f"{self._model} does not call tools; models that do get these servers' tools"
        else:
            tip = "The MCP servers whose tools models that call tools are offered"
        self.setToolTip(tip)
        self.setAccessibleDescription(tip)

    def _fill(self) -> None:
        menu, settings = self.menu(), self._tools.settings
        menu.clear()
        if self._calls_tools is False:
            menu.addAction(f"{self._model} does not call tools").setEnabled(False)
            menu.addSeparator()
        if not settings.servers:
            menu.addAction("No MCP servers yet").setEnabled(False)
        for server in settings.servers:
            action = menu.addAction(server.name)
            action.setCheckable(True)
            action.setChecked(server.enabled)
            action.setToolTip(server.where)
            action.toggled.connect(lambda on, name=server.name: self._turn(name, on))
        menu.addSeparator()
        first = menu.addAction("Make models call a tool first")
        first.setCheckable(True)
        first.setChecked(settings.require_call)
        first.toggled.connect(self._require)
        menu.addAction("Add or edit servers…", self.manage_requested.emit)

    def _turn(self, name: str, on: bool) -> None:
        settings = self._tools.settings
        servers = (s.with_enabled(on) if s.name == name else s for s in settings.servers)
        self._tools.save(settings.with_servers(servers))

    def _require(self, on: bool) -> None:
        self._tools.save(replace(self._tools.settings, require_call=on))
