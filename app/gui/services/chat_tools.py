"""MCP tools in the app: the servers the user added (Settings, MCP servers), the tools a chat
offers a model that can call tools, and each call the model makes, run only once the user
approves it (or has always allowed that tool).

Listing tools starts servers and calling them may take long, so both run on the network
workers; the host (``app.tools.host``) runs the MCP SDK on its own event loop, so a server that
hangs or crashes comes back as an error on the call, in the chat, never as a frozen window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.chat.tool_calls import (
    DENIED,
    DONE,
    FAILED,
    MAX_ROUNDS,
    RUNNING,
    ToolCall,
    rounds_so_far,
)
from localllm.app.gui.state.gateway import Gateway, GatewayError
from localllm.app.gui.workers import Workers
from localllm.app.tools.catalog import ToolCatalog, ToolSpec, required_call_format
from localllm.app.tools.config_store import McpSettings, McpSettingsStore
from localllm.app.tools.errors import ToolError
from localllm.app.tools.host import McpHost
from localllm.app.tools.results import ToolResult
from localllm.app.tools.servers import ServerConfig

__all__ = ["ChatTools"]

Change = Callable[..., bool]  # (a change of a ChatSession, the session) -> done


class ChatTools(QObject):
    changed = Signal()  # the servers, their status or their tools changed
    error = Signal(str)

    def __init__(
        self,
        gateway: Gateway,
        net: Workers,
        config_dir: Path,
        parent: QObject | None = None,
        *,
        keyring_backend: Any = None,
    ):
        super().__init__(parent)
        self._gateway, self._net = gateway, net
        self._store = McpSettingsStore(config_dir, keyring_backend=keyring_backend)
        self.host = McpHost(log_dir=Path(config_dir) / "mcp-logs")
        self.settings = McpSettings()
        self._lock = threading.Lock()
        self._unsaved: McpSettings | None = None  # newer than the file; a worker writes it
        self._listed: dict[str, list[ToolSpec]] = {}  # server name -> its tools
        self.status: dict[str, str] = {}  # server name -> a line for the settings page
        self._capable: dict[str, bool] = {}  # model -> it can call tools
        self._ask: Change = lambda _change, _session: False  # until the controller binds
        self._change: Change = lambda _change, _session: False
        self._open: Callable[[], Any] = lambda: None

    # settings (UI thread)

    def load(self) -> None:
        self._net.call(self._store.load, self._loaded, lambda e: self.error.emit(str(e)))

    def save(self, settings: McpSettings) -> None:
        """New servers (or an edit): forget what was listed, stop what changed."""
        old = {s.name: s for s in self.settings.servers}
        self.settings = settings
        with self._lock:
            for name in list(self._listed):
                if settings.server(name) != old.get(name):
                    self._listed.pop(name)
                    self.status.pop(name, None)
        for name, server in old.items():
            if settings.server(name) != server:
                self._stop_server(name)
        with self._lock:
            writing, self._unsaved = self._unsaved is not None, settings
        if not writing:
            self._net.call(self._write_unsaved, None, lambda e: self.error.emit(str(e)))
        self.changed.emit()

    def _stop_server(self, name: str) -> None:
        self._net.call(lambda: self.host.stop(name))

    def _write_unsaved(self) -> None:
        """Write the newest settings until none are left (a worker): one writer at a time, so
        an older write never lands after a newer one (two clicks in a row lost the second)."""
        while True:
            with self._lock:
                settings = self._unsaved
            if settings is None:  # a failed write cleared it: nothing left to write
                return
            try:
                self._store.save(settings)
            except BaseException:
                with self._lock:
                    self._unsaved = None  # said as an error; the next save writes again
                raise
            with self._lock:
                if self._unsaved is settings:
                    self._unsaved = None
                    return

    def refresh(self, server: ServerConfig) -> None:
        """List one server's tools now (the settings page's "Check")."""
        with self._lock:
            self._listed.pop(server.name, None)
        self._net.call(lambda: self._list(server), lambda _: self.changed.emit())

    def tools_of(self, name: str) -> list[ToolSpec]:
        with self._lock:
            return list(self._listed.get(name, ()))

    # what a chat offers (on a worker: may start servers and ask the daemon)

    def request(self, model: str, rounds: int) -> dict[str, Any]:
        """The ``tools`` (and, when the user wants a call first, the ``format``) for one
        request; nothing for a model that cannot call tools, or past the rounds cap."""
        servers = self.settings.enabled()
        if not servers or rounds >= MAX_ROUNDS or not self._can_call_tools(model):
            return {}
        catalog = self._catalog(servers)
        if not len(catalog):
            return {}
        fields: dict[str, Any] = {"tools": catalog.for_model()}
        if self.settings.require_call and rounds == 0:
            fields["format"] = required_call_format(catalog)
        return fields

    def _can_call_tools(self, model: str) -> bool:
        if model not in self._capable:
            try:
                self._capable[model] = "tools" in self._gateway.details(model).capabilities
            except GatewayError:
                return False  # the chat request itself will say what is wrong
        return self._capable[model]

    def _catalog(self, servers: tuple[ServerConfig, ...]) -> ToolCatalog:
        catalog = ToolCatalog()
        for server in servers:
            with self._lock:
                tools = self._listed.get(server.name)
            for tool in tools if tools is not None else self._list(server):
                catalog.add(tool)
        return catalog

    def _list(self, server: ServerConfig) -> list[ToolSpec]:
        try:
            tools = self.host.tools(server)
        except ToolError as exc:
            self.status[server.name] = f"Error: {exc}"
            self.changed.emit()
            self.error.emit(f"MCP server {exc}")
            return []
        with self._lock:
            self._listed[server.name] = tools
        self.status[server.name] = f"Running · {len(tools)} tool{'s' * (len(tools) != 1)}"
        self.changed.emit()
        return tools

    def _run(self, call: ToolCall) -> ToolResult:
        catalog = self._catalog(self.settings.enabled())
        spec = catalog.get(call.name)
        server = self.settings.server(spec.server) if spec is not None else None
        if spec is None or server is None:
            raise ToolError(f"the model asked for {call.name!r}, which no enabled server offers")
        return self.host.call(server, spec.name, call.arguments)

    # the user's answers (UI thread)

    def bind(self, ask: Change, change: Change, open_session: Callable[[], Any]) -> None:
        """The chat controller's ways to change a chat: ``ask`` (then the model goes on),
        ``change`` (saved and shown, nothing asked), and the chat on screen."""
        self._ask, self._change, self._open = ask, change, open_session

    def offer(self, model: str, session: ChatSession) -> Callable[[], dict[str, Any]]:
        """What to add to a request of ``session`` (to call on a worker: it may block)."""
        rounds = rounds_so_far(session.messages[:-1])
        return lambda: self.request(model, rounds)

    def after_reply(self, session: ChatSession) -> None:
        """A reply just made tool calls: run those the user always allows."""
        for call in session.pending_calls:
            spec = self._spec(call.name)
            server = self.settings.server(spec.server) if spec is not None else None
            if spec is not None and server is not None and self.settings.is_allowed(server, spec):
                self._decide(session, call.id, "approve")

    def decide(self, call_id: str, choice: str) -> None:
        """The user's answer to a tool call of the open chat: "approve", "always" (approve,
        and never ask for this tool again) or "deny"."""
        session = self._open()
        if session is not None:
            self._decide(session, call_id, choice)

    def _decide(self, session: ChatSession, call_id: str, choice: str) -> None:
        call = next((c for c in session.pending_calls if c.id == call_id), None)
        if call is None:
            return
        if choice == "deny":
            self._change(lambda s: s.settle(call_id, DENIED), session)
            return self._maybe_resume(session)
        spec = self._spec(call.name)
        server = self.settings.server(spec.server) if spec is not None else None
        if choice == "always" and spec is not None and server is not None:
            self.save(self.settings.allowing(server, spec))
        self._change(lambda s: s.settle(call_id, RUNNING), session)

        def settle(status: str, text: str) -> None:
            # False: the reply was deleted meanwhile, and nobody waits for this answer
            if self._change(lambda s: s.settle(call_id, status, text), session):
                self._maybe_resume(session)

        self._net.call(
            lambda: self._run(call),
            lambda result: settle(FAILED if result.is_error else DONE, result.text),
            lambda error: settle(FAILED, str(error)),
        )

    def _maybe_resume(self, session: ChatSession) -> None:
        last = session.messages[-1] if session.messages else None
        if last is not None and last.tool_calls and all(c.settled for c in last.tool_calls):
            self._ask(lambda s: s.resume(), session)

    def _spec(self, name: str) -> ToolSpec | None:
        """A tool by the name the model used, among those listed (named as ``_catalog``)."""
        catalog = ToolCatalog()
        with self._lock:
            for server in self.settings.enabled():
                for tool in self._listed.get(server.name, ()):
                    catalog.add(tool)
        return catalog.get(name)

    def shutdown(self) -> None:
        self.host.close()

    def _loaded(self, settings: McpSettings) -> None:
        self.settings = settings
        self.changed.emit()
