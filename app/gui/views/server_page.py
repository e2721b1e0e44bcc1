"""The Server page: the daemon (running or not, its port, start and stop, and what it advises
about its llama.cpp build: a GPU the build leaves unused, with the fix), where the API lives,
code to call it, what is loaded, the remote engines it serves, who may connect, and the
daemon's log.

Serving on the local network needs the API key, so the switch shows the key (hidden until
asked) with a copy button, and the snippets include it. The log leaves out the app's own
requests (its checks would bury everything else) unless asked to show them.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import Banner, padded_number
from localllm.app.gui.services.server import ServerService
from localllm.app.gui.state.daemon_health import DaemonState, DaemonStatus
from localllm.app.gui.state.daemon_log import readable, visible_log
from localllm.app.gui.state.gateway import DEFAULT_BASE_URL
from localllm.app.gui.state.records import ServerInfo, SystemInfo
from localllm.app.gui.state.snippets import snippets
from localllm.app.gui.views.plain_text import plain_label, rich_label
from localllm.app.gui.views.record_table import selected_record, table_view
from localllm.app.gui.views.remotes_section import RemotesSection

__all__ = ["ServerPage"]


def _mono(wrap: bool = True) -> QPlainTextEdit:
    box = QPlainTextEdit(readOnly=True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    if not wrap:  # code keeps its indentation: it scrolls sideways instead
        box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    return box


def _copy_button(text_source, what: str = "Copy") -> QPushButton:
    button = QPushButton("Copy")
    button.setAccessibleName(what)
    button.setToolTip(what)
    button.clicked.connect(lambda: QGuiApplication.clipboard().setText(text_source()))
    return button


class ServerPage(QWidget):
    def __init__(
        self, server: ServerService, base_url: str = DEFAULT_BASE_URL, parent=None, icons=None
    ):
        super().__init__(parent)
        self.server = server
        self.build_advice = Banner(icons, dismissible=False, tone="warning")  # a GPU left unused
        self._base_url = base_url
        self._api_key = ""
        self._model = ""
        self.address = rich_label()
        self.status = plain_label(objectName="muted")
        self.address.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.snippet_tabs = QTabWidget()
        self.running = table_view(server.running, self, stretch=0)
        self.remotes = RemotesSection(server.remotes, self)
        self.unload = QPushButton("Unload")
        self.lan = QCheckBox("Serve on the local network")
        self.api_key = QLineEdit(readOnly=True, echoMode=QLineEdit.EchoMode.Password)
        self.show_key = QPushButton("Show")
        self.show_key.setCheckable(True)
        self.log = _mono()
        self._log_text = ""
        self._log_problem = ""  # why the log could not be fetched, while the page says it
        self.show_own = QCheckBox("Show the app's own requests")
        self.show_own.setToolTip(
            "This window's own reads (is the daemon up, downloads, loaded models, memory "
            "plans, the hub's lists, this log), hidden by default, offline too; its chats, "
            "its changes and anything the daemon refused or failed at always show"
        )
        self.port = QSpinBox(minimum=1, maximum=65535)
        padded_number(self.port)
        self.port.setToolTip("The port the daemon listens on")
        self.move_port = QPushButton("Use this port")
        self.move_port.setEnabled(False)
        self.start_stop = QPushButton("Stop the daemon")
        self._port = 0  # the port the daemon runs on
        self.message = plain_label(objectName="muted", wordWrap=True)  # the daemon's errors
        self._log_timer = QTimer(self, interval=3000)
        self._log_timer.timeout.connect(self._tick)

        self.unload.clicked.connect(self._unload)
        self.show_own.toggled.connect(lambda _on: self._refilter())
        self.port.valueChanged.connect(lambda value: self.move_port.setEnabled(value != self._port))
        self.move_port.clicked.connect(lambda: server.set_port(self.port.value()))
        self.start_stop.clicked.connect(self._start_or_stop)
        self._allow_port_change(server.port_movable)
        self.lan.clicked.connect(server.set_lan)
        self.show_key.toggled.connect(
            lambda on: self.api_key.setEchoMode(
                QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password
            )
        )
        server.info_changed.connect(self._info)
        server.switching.connect(self._switching)
        server.api_key_ready.connect(self._key)
        server.log_ready.connect(self._show_log)
        server.log_failed.connect(self._log_failed)
        server.error.connect(self.message.setText)
        self._build()
        self._fill_snippets()

    def _build(self) -> None:
        address = QHBoxLayout()
        address.addWidget(self.address)
        address.addWidget(_copy_button(lambda: self._v1, "Copy the API address"))
        address.addStretch(1)
        loaded = QHBoxLayout()
        loaded.addWidget(QLabel("<b>Loaded models</b>"))
        loaded.addStretch(1)
        loaded.addWidget(self.unload)
        self.key_row = QWidget()
        key = QHBoxLayout(self.key_row)
        key.setContentsMargins(0, 0, 0, 0)
        key.addWidget(QLabel("API key"))
        key.addWidget(self.api_key, 1)
        key.addWidget(self.show_key)
        key.addWidget(_copy_button(lambda: self._api_key))
        self.key_row.hide()
        self.lan.setToolTip(
            "Restarts the daemon on every network interface; other devices "
            "then need the API key shown below"
        )
        self.running.setMinimumHeight(130)
        self.snippet_tabs.setMinimumHeight(190)
        self.log.setMinimumHeight(180)
        self.remotes.setMinimumHeight(150)
        who = QVBoxLayout()
        who_title = QLabel("Who may connect")
        who_title.setObjectName("sectionTitle")
        who.addWidget(who_title)
        who.addWidget(self.lan)
        key_needed = QLabel("Other devices need the API key.")
        key_needed.setObjectName("muted")
        who.addWidget(key_needed)
        who.addWidget(self.key_row)
        refresh_log = QPushButton("Refresh")
        refresh_log.clicked.connect(self.server.fetch_log)
        log_title = QHBoxLayout()
        log_title.addWidget(QLabel("<b>Daemon log</b>"))
        log_title.addStretch(1)
        log_title.addWidget(self.show_own)
        log_title.addWidget(refresh_log)
        daemon = QHBoxLayout()
        daemon.addWidget(self.status, 1)
        daemon.addWidget(QLabel("Port"))
        daemon.addWidget(self.port)
        daemon.addWidget(self.move_port)
        daemon.addWidget(self.start_stop)
        body = QWidget()
        layout = QVBoxLayout(body)
        title = QLabel("Server")
        title.setObjectName("pageTitle")
        layout.addWidget(title)
        layout.addLayout(daemon)
        layout.addWidget(self.build_advice)
        layout.addLayout(address)
        layout.addWidget(self.snippet_tabs)
        layout.addLayout(loaded)
        layout.addWidget(self.running)
        layout.addLayout(who)
        layout.addWidget(self.remotes)
        layout.addLayout(log_title)
        layout.addWidget(self.log, 1)
        layout.addWidget(self.message)
        scroll = QScrollArea(widgetResizable=True)  # a small window scrolls, nothing squeezed
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    @property
    def _v1(self) -> str:
        return self._base_url.rstrip("/") + "/v1"

    def show_status(self, status: DaemonStatus) -> None:
        """The daemon's state, and Start or Stop to match."""
        self.status.setText(status.text())
        busy = status.state in (DaemonState.CONNECTING, DaemonState.STARTING, DaemonState.STOPPING)
        self.start_stop.setText("Stop the daemon" if status.up or busy else "Start the daemon")
        self.start_stop.setEnabled(not busy and not self.server.remote)
        self.move_port.setEnabled(status.up and self.port.value() != self._port)

    def _start_or_stop(self) -> None:
        if self.start_stop.text().startswith("Stop"):
            self.server.stop_daemon()
        else:
            self.server.start_daemon()

    def _allow_port_change(self, allowed: bool) -> None:
        self.port.setEnabled(allowed)
        if not allowed:
            self.port.setToolTip(
                "Set by --host or LOCALLLM_HOST (or the daemon runs on another computer)"
            )

    def show_system(self, system: SystemInfo) -> None:
        """The daemon's advice about its llama.cpp build ("": nothing to say)."""
        self.build_advice.show_text(system.build_advice, "warning")

    def retheme(self) -> None:
        self.build_advice.retheme()

    def set_model(self, name: str) -> None:
        """Use a model the user has in the snippets."""
        if name and name != self._model:
            self._model = name
            self._fill_snippets()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.server.refresh()
        self.server.fetch_log()
        self._log_timer.start()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._log_timer.stop()

    def _tick(self) -> None:
        self.server.refresh_running()
        self.server.remotes.refresh()
        self.server.fetch_log()

    def _info(self, info: ServerInfo) -> None:
        self._base_url = info.lan_url or info.base_url
        if info.lan:
            where = "on the local network; other devices need the API key"
        else:
            where = "on this computer only"
        self.address.setText(f"OpenAI-compatible API at <b>{html.escape(self._v1)}</b> ({where})")
        self.lan.setChecked(info.lan)
        self._port = info.port
        self.port.setValue(info.port)
        self.move_port.setEnabled(False)
        self.key_row.setVisible(info.api_key_set or info.lan)
        self._fill_snippets()

    def _switching(self, busy: bool) -> None:
        self.lan.setEnabled(not busy)
        self._allow_port_change(not busy and self.server.port_movable)
        if busy:
            self.message.setText("Restarting the daemon with the new setting…")
        elif self.message.text().startswith("Restarting"):
            self.message.clear()

    def _key(self, key: str) -> None:
        self._api_key = key
        self.api_key.setText(key)
        self._fill_snippets()

    def _log_failed(self, problem: str) -> None:
        self._log_problem = problem
        self.message.setText(problem)

    def _show_log(self, text: str) -> None:
        if self._log_problem and self.message.text() == self._log_problem:
            self.message.clear()  # the daemon answers again: "not answering" is stale
        self._log_problem = ""
        self._log_text = text
        self._refilter()

    def _refilter(self) -> None:
        shown = visible_log(self._log_text, self.show_own.isChecked())
        text = "\n".join(readable(line) for line in shown.splitlines())
        bar = self.log.verticalScrollBar()
        pinned = bar.value() >= bar.maximum() - 4
        if text != self.log.toPlainText():
            self.log.setPlainText(text)
            if pinned:
                bar.setValue(bar.maximum())

    def _fill_snippets(self) -> None:
        current = self.snippet_tabs.currentIndex()
        self.snippet_tabs.clear()
        key = self._api_key if self.lan.isChecked() else ""
        for snippet in snippets(self._base_url, self._model or "qwen:0.5b", key):
            page = QWidget()
            box = _mono(wrap=False)
            box.setPlainText(snippet.code)
            column = QVBoxLayout(page)
            column.addWidget(box, 1)
            copy = _copy_button(box.toPlainText, f"Copy the {snippet.title} code")
            column.addWidget(copy, 0, Qt.AlignmentFlag.AlignRight)
            self.snippet_tabs.addTab(page, snippet.title)
        self.snippet_tabs.setCurrentIndex(max(current, 0))
        if not self.address.text():
            self.address.setText(f"OpenAI-compatible API at <b>{html.escape(self._v1)}</b>")

    def _unload(self) -> None:
        model = selected_record(self.running)
        if model is not None and model.remote:
            self.message.setText(
                f"{model.name} runs on the remote {model.remote}: nothing to unload."
            )
        elif model is not None:
            self.server.unload(model.name)
