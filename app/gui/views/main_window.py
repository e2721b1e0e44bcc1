"""The main window: navigation, the five pages, the status bar, shortcuts, and what is
remembered between runs (size, position, last chat, last model) in ``QSettings``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QWidget,
)

from app.gui.icons import Icons
from app.gui.services.bundle import Services
from app.gui.state.chat.session import ChatSession
from app.gui.views.chat_page import ChatPage
from app.gui.views.discover_page import DiscoverPage
from app.gui.views.documents_bar import DocumentsBar
from app.gui.views.downloads_page import DownloadsPage
from app.gui.views.found_panel import FoundPanel
from app.gui.views.import_dialog import ask_import_name
from app.gui.views.models_page import ModelsPage
from app.gui.views.server_page import ServerPage
from app.gui.views.status import DaemonIndicator
from app.gui.views.tools_page import ToolsPage
from app.gui.views.welcome import WelcomePage

__all__ = ["PAGES", "MainWindow"]

PAGES = (
    ("Chat", "chat"),
    ("Models", "models"),
    ("Discover", "discover"),
    ("Downloads", "downloads"),
    ("Server", "server"),
    ("Tools", "tools"),
)
_MESSAGE_MS = 8000


class MainWindow(QMainWindow):
    def __init__(
        self,
        services: Services,
        settings: QSettings,
        icons: Icons | None = None,
        base_url: str = "",
    ):
        super().__init__()
        self.services, self.settings = services, settings
        self.icons = icons or Icons()
        self.hide_to_tray = False  # set by run_app when a tray icon is shown
        self.setWindowTitle("localllm")
        self.setWindowIcon(self.icons.app_icon())
        s = services
        self.welcome = WelcomePage()
        documents = DocumentsBar(
            s.documents, s.downloads.pull, lambda: [m.name for m in s.library.models()]
        )
        self.chat_page = ChatPage(s.chat, s.library, self.welcome, self.icons, documents=documents)
        self.models_page = ModelsPage(s.library)
        self.found_panel = FoundPanel(s.found)
        self.models_page.add_panel(self.found_panel)
        self.discover_page = DiscoverPage(s.hub)
        self.downloads_page = DownloadsPage(s.downloads)
        self.server_page = ServerPage(s.server, base_url) if base_url else ServerPage(s.server)
        self.tools_page = ToolsPage(s.tools)
        self.pages = QStackedWidget()
        for page in (
            self.chat_page,
            self.models_page,
            self.discover_page,
            self.downloads_page,
            self.server_page,
            self.tools_page,
        ):
            self.pages.addWidget(page)
        self.nav = QListWidget(objectName="nav")
        self.nav.setFixedWidth(150)
        for title, icon in PAGES:
            self.nav.addItem(QListWidgetItem(self.icons.get(icon), title))
        self.nav.currentRowChanged.connect(self.pages.setCurrentIndex)
        central = QWidget()
        row = QHBoxLayout(central)
        row.addWidget(self.nav)
        row.addWidget(self.pages, 1)
        self.setCentralWidget(central)
        self.indicator = DaemonIndicator()
        self.downloads_label = QLabel()
        self.statusBar().addPermanentWidget(self.downloads_label)
        self.statusBar().addPermanentWidget(self.indicator)
        self._connect()
        self._shortcuts()
        self._restore()
        self.nav.setCurrentRow(0)

    def retheme(self, dark: bool) -> None:
        """Redraw what carries its own colours: the icons and the conversation."""
        for row, (_title, icon) in enumerate(PAGES):
            self.nav.item(row).setIcon(self.icons.get(icon))
        self.chat_page.retheme(dark)

    def show_page(self, title: str) -> None:
        self.nav.setCurrentRow([t for t, _ in PAGES].index(title))

    def message(self, text: str) -> None:
        self.statusBar().showMessage(text, _MESSAGE_MS)

    # wiring

    def _connect(self) -> None:
        s = self.services
        s.monitor.status_changed.connect(self.indicator.show_status)
        s.monitor.status_changed.connect(self.server_page.show_status)
        self.indicator.restart_requested.connect(s.monitor.restart)
        s.library.changed.connect(self._models_changed)
        s.hub.system_changed.connect(self.welcome.set_system)
        s.downloads.active_changed.connect(self._downloads_changed)
        s.downloads.finished.connect(self._download_finished)
        s.chat.loaded.connect(self._open_last_chat)
        s.chat.opened.connect(self._remember_chat)
        for source in (s.library.error, s.downloads.error, s.server.error, s.tools.error):
            source.connect(self.message)
        s.found.added.connect(lambda name: self.message(f"{name} is ready."))
        self.welcome.pull_requested.connect(self._pull)
        self.welcome.import_requested.connect(self._import)
        self.discover_page.pull_requested.connect(self._pull)
        self.models_page.import_requested.connect(self._import)
        self.models_page.chat_requested.connect(self._chat_with)
        self.chat_page.transcript.copied.connect(self.message)
        self.chat_page.model_picker.activated.connect(  # after the page took the choice
            lambda _row: self.server_page.set_model(s.chat.default_model)
        )
        self._connect_chat_settings()

    def _connect_chat_settings(self) -> None:
        s, panel = self.services, self.chat_page.settings
        panel.preset_saved.connect(s.presets.save)
        panel.preset_deleted.connect(s.presets.delete)
        s.presets.changed.connect(panel.set_presets)
        s.presets.error.connect(self.message)
        s.hub.system_changed.connect(panel.set_system)
        s.hub.system_changed.connect(self.chat_page.set_system)
        s.library.details_ready.connect(self._model_details)
        s.chat.conversations.dataChanged.connect(self._chat_changed)

    def _shortcuts(self) -> None:
        keys = (
            (QKeySequence.StandardKey.New, self._new_chat),
            (QKeySequence.StandardKey.Find, self._find),
            (QKeySequence("Ctrl+Q"), self.quit_app),
        )
        for key, action in keys:
            QShortcut(key, self, action, context=Qt.ShortcutContext.ApplicationShortcut)
        for number, (title, _icon) in enumerate(PAGES, start=1):
            QShortcut(QKeySequence(f"Ctrl+{number}"), self, lambda t=title: self.show_page(t))

    def _new_chat(self) -> None:
        self.show_page("Chat")
        self.chat_page.new_chat()

    def _find(self) -> None:
        self.show_page("Chat")
        self.chat_page.focus_search()

    def _models_changed(self, models) -> None:
        self.chat_page.show_welcome(not models)
        chat = self.services.chat
        names = [m.name for m in models]
        if names and chat.default_model not in names:
            chat.default_model = names[0]
        session = chat.session
        if (
            names
            and session is not None
            and not session.conversation.model
            and not session.messages
        ):
            chat.new_chat(chat.default_model)  # the empty chat on screen gets a model
        if names:
            self.server_page.set_model(chat.default_model)

    def _model_details(self, details) -> None:
        """Details of the open chat's model reach its settings (GPU layers, no template)."""
        row = self.services.library.table.row_of(details.name)
        size = self.services.library.table.item(row).size if row is not None else 0
        self.chat_page.settings.show_model(details, size)

    def _chat_changed(self, *_range) -> None:
        session = self.services.chat.session
        if session is not None:
            self.chat_page.settings.follow(session.conversation)

    def _downloads_changed(self, _active: int) -> None:
        states = [d.state for d in self.services.downloads.state.items()]
        kinds = ("running", "queued", "paused")
        parts = [f"{states.count(s)} {s}" for s in kinds if s in states]
        self.downloads_label.setText(("Downloads: " + ", ".join(parts)) if parts else "")
        for download in self.services.downloads.state.items():
            self.welcome.show_download(download)

    def _pull(self, name: str) -> None:
        self.services.downloads.pull(name)
        self.message(f"Downloading {name}; progress is on the Downloads page.")

    def _import(self, path: Path | None) -> None:
        if path is None:
            chosen, _ = QFileDialog.getOpenFileName(
                self, "Import a GGUF model", "", "GGUF (*.gguf)"
            )
            path = Path(chosen) if chosen else None
        name = ask_import_name(self, path) if path is not None else None
        if name:
            self.services.downloads.import_file(name, path)
            self.message(f"Importing {path.name} as {name}…")

    def _download_finished(self, name: str) -> None:
        self.message(f"{name} is ready.")
        chat = self.services.chat
        if chat.session is None or not chat.session.conversation.model:
            chat.default_model = name

    def _chat_with(self, name: str) -> None:
        self.services.chat.default_model = name
        self.show_page("Chat")
        self.services.chat.new_chat(name)

    # remembering

    def _restore(self) -> None:
        geometry = self.settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1180, 760)
        self.services.chat.default_model = str(self.settings.value("chat/model", "") or "")

    def _open_last_chat(self) -> None:
        last = str(self.settings.value("chat/last", "") or "")
        chat = self.services.chat
        if last and chat.conversations.conversation(last) is not None:
            chat.open(last)
        elif chat.conversations.rowCount():
            chat.open_first()
        else:
            chat.new_chat()

    def _remember_chat(self, session: ChatSession | None) -> None:
        self.settings.setValue("chat/last", session.conversation.id if session else "")

    def save_state(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("chat/model", self.services.chat.default_model)
        self.settings.sync()

    def quit_app(self) -> None:
        self.save_state()
        QApplication.quit()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_state()
        if self.hide_to_tray:
            self.hide()
            event.ignore()
            return
        super().closeEvent(event)
