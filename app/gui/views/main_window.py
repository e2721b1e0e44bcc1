"""The main window: navigation, the pages, the banners that concern every page (offline, in
the navigation column's free room; a GPU the llama.cpp build leaves unused), the status bar,
shortcuts, and what is remembered between runs (size, position, last chat, last model, the
Settings page's choices) in ``QSettings``.
Which model new chats use and which chat opens are decided by ``ChatChoice`` (Qt-free); the
window wires its signals and shows what it decides.

The window never grows by itself: its minimum size is set here, so a page that asks for more
room (the chat settings opening at 1,024 px) is laid out within the width the user chose.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QCloseEvent, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.design.widgets import Banner
from localllm.app.gui.icons import Icons
from localllm.app.gui.services.bundle import Services
from localllm.app.gui.services.setting_plan import SettingPlan
from localllm.app.gui.state.chat.records import ChatOptions
from localllm.app.gui.state.chat_choice import ChatChoice
from localllm.app.gui.state.gateway import DEFAULT_BASE_URL
from localllm.app.gui.state.preferences import Preferences
from localllm.app.gui.state.records import InstalledModel, SystemInfo
from localllm.app.gui.state.setting_plan import memory_options
from localllm.app.gui.views.chat_page import ChatPage
from localllm.app.gui.views.discover_page import DiscoverPage
from localllm.app.gui.views.documents_bar import DocumentsBar
from localllm.app.gui.views.downloads_page import DownloadsPage
from localllm.app.gui.views.file_dialogs import open_file_name
from localllm.app.gui.views.found_panel import FoundPanel
from localllm.app.gui.views.import_dialog import ask_import_name
from localllm.app.gui.views.models_page import ModelsPage
from localllm.app.gui.views.offline_notice import OfflineNotice
from localllm.app.gui.views.quit_note import Quitting
from localllm.app.gui.views.server_page import ServerPage
from localllm.app.gui.views.settings_page import SettingsPage
from localllm.app.gui.views.status import DaemonIndicator
from localllm.app.gui.views.tools_page import ToolsPage
from localllm.app.gui.views.voice_settings import VoiceSection
from localllm.app.gui.views.welcome import WelcomePage
from localllm.app.gui.views.window_memory import remember_place, restore_place

__all__ = ["CONTEXT_KEY", "MINIMUM_SIZE", "PAGES", "THEME_KEY", "MainWindow"]

PAGES = (
    ("Chat", "chat"),
    ("Models", "models"),
    ("Discover", "discover"),
    ("Downloads", "downloads"),
    ("Server", "server"),
    ("Tools", "tools"),
    ("Settings", "settings"),
)
_MESSAGE_MS = 8000
MINIMUM_SIZE = (900, 560)  # every page is usable here, at 1x; the window never grows itself
THEME_KEY = "app/theme"  # QSettings: "system", "light" or "dark"
CONTEXT_KEY = "chat/context"  # QSettings: the context chats ask for (0: the daemon decides)


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
        self.quitting = Quitting(self, settings, services.server, services.monitor)
        self.theme = None  # set by open_window: the Settings page switches it
        self.setWindowTitle("localllm")
        self.setWindowIcon(self.icons.app_icon())
        self.setMinimumSize(*MINIMUM_SIZE)
        s = services
        self.choice = ChatChoice(s.chat, s.chat.conversations, settings)
        self.preferences = Preferences.read(
            settings.value(THEME_KEY, "system"), settings.value(CONTEXT_KEY, "")
        )
        s.library.preferred_context = self.preferences.context
        s.hub.plan_context = self.preferences.context  # what Discover's plans assume
        s.voice.remember_in(settings)
        self.welcome = WelcomePage()
        documents = DocumentsBar(
            s.documents, s.downloads.pull, lambda: [m.name for m in s.library.models()]
        )
        self.chat_page = ChatPage(
            s.chat,
            s.library,
            self.welcome,
            self.icons,
            documents=documents,
            offer_plan=SettingPlan(s.gateway, s.net, self),  # a long chat's larger context
            voice=s.voice,
        )
        self.models_page = ModelsPage(s.library)
        self.found_panel = FoundPanel(s.found)
        self.models_page.add_panel(self.found_panel)
        self.discover_page = DiscoverPage(s.hub)
        self.downloads_page = DownloadsPage(s.downloads)
        self.server_page = ServerPage(s.server, base_url or DEFAULT_BASE_URL, icons=self.icons)
        self.tools_page = ToolsPage(s.tools)
        folders = s.gateway.data_folders(s.chat.data_dir)
        self.voice_settings = VoiceSection(s.voice)
        self.settings_page = SettingsPage(
            self.preferences, s.server.running, folders, s.gateway, s.net, voice=self.voice_settings
        )
        # what the chat's model would take: at the Settings page's context, at a chat's settings
        self.context_plan = SettingPlan(s.gateway, s.net, self)
        self.chat_plan = SettingPlan(s.gateway, s.net, self)
        by_title: dict[str, QWidget] = {
            "Chat": self.chat_page,
            "Models": self.models_page,
            "Discover": self.discover_page,
            "Downloads": self.downloads_page,
            "Server": self.server_page,
            "Tools": self.tools_page,
            "Settings": self.settings_page,
        }
        self.pages = QStackedWidget()
        self.nav = QListWidget()
        self.nav.setObjectName("nav")
        self.nav.setAccessibleName("Pages")
        self.nav.setFixedWidth(164)
        self.nav.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # a click shows no ring round the list
        for title, icon in PAGES:  # the one order: each entry and its page added together
            self.pages.addWidget(by_title.pop(title))
            self.nav.addItem(QListWidgetItem(self.icons.get(icon), title))
        assert not by_title, f"pages missing from PAGES: {sorted(by_title)}"
        self.nav.currentRowChanged.connect(self.pages.setCurrentIndex)
        self.offline = OfflineNotice(  # the hub cannot be reached: said once, beside the pages
            settings, self.icons, on_import=lambda: self._import(None), on_retry=s.hub.check_online
        )
        self.build_advice = Banner(self.icons, tone="warning")  # a GPU the build leaves unused
        self._advice_command = ""
        self.copy_advice = self.build_advice.add_action(
            "Copy the command",
            lambda: QGuiApplication.clipboard().setText(self._advice_command),
        )
        self.build_advice.finish_actions()
        self.setCentralWidget(self._frame())
        self.indicator = DaemonIndicator()
        self.downloads_label = QLabel()
        self.statusBar().addPermanentWidget(self.downloads_label)
        self.statusBar().addPermanentWidget(self.indicator)
        self._connect()
        self._shortcuts()
        self._restore()
        self.nav.setCurrentRow(0)
        self.chat_page.composer.editor.setFocus()  # where a new user types; no ring on the nav

    def _frame(self) -> QWidget:
        brand = QLabel("localllm")
        brand.setObjectName("sectionTitle")
        brand.setContentsMargins(SPACE.md, SPACE.sm, 0, SPACE.sm)
        left = QVBoxLayout()
        left.setContentsMargins(SPACE.sm, SPACE.sm, SPACE.sm, SPACE.sm)
        left.addWidget(brand)
        left.addWidget(self.nav, 1)
        self.offline.setMaximumWidth(self.nav.maximumWidth())  # the column keeps its width
        left.addWidget(self.offline)  # in the column's free room: the pages never move for it
        page = QWidget()
        page.setObjectName("page")
        column = QVBoxLayout(page)
        column.setContentsMargins(SPACE.md, SPACE.md, SPACE.md, 0)
        column.addWidget(self.build_advice)
        column.addWidget(self.pages, 1)
        central = QWidget()
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addLayout(left)
        row.addWidget(page, 1)
        return central

    def retheme(self, dark: bool) -> None:
        """Redraw what carries its own colours: the icons, the banners and the conversation."""
        for row, (_title, icon) in enumerate(PAGES):
            self.nav.item(row).setIcon(self.icons.get(icon))
        self.offline.retheme()
        self.build_advice.retheme()
        self.server_page.retheme()
        self.chat_page.retheme(dark)
        self.welcome.retheme()
        self.discover_page.retheme()

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
        self.welcome.plans_wanted.connect(s.hub.plan_catalog)
        s.hub.catalog_planned.connect(self.welcome.set_plan)
        s.hub.system_changed.connect(self._system_changed)
        s.downloads.active_changed.connect(self._downloads_changed)
        s.downloads.finished.connect(self._download_finished)
        s.chat.loaded.connect(self.choice.open_last_chat)
        s.chat.opened.connect(self.choice.remember_chat)
        for source in (s.library.error, s.downloads.error, s.server.error, s.tools.error):
            source.connect(self.message)
        s.found.added.connect(lambda name: self.message(f"{name} is ready."))
        s.hub.offline_changed.connect(self._offline_changed)
        s.server.info_changed.connect(self.settings_page.show_server)
        self.settings_page.theme_changed.connect(self._theme_picked)
        self.settings_page.context_changed.connect(self._context_picked)
        self.settings_page.lan_changed.connect(s.server.set_lan)
        self.settings_page.show_quit(self.quitting.memory.choice)
        self.settings_page.quit_changed.connect(self.quitting.memory.remember)
        self.settings_page.page_requested.connect(self.show_page)
        self.settings_page.message.connect(self.message)
        self.pages.currentChanged.connect(lambda _i: self._show_cost(fresh=True))
        self.pages.currentChanged.connect(lambda _i: self._plan_chat())
        self.context_plan.changed.connect(
            lambda: self.settings_page.show_cost(self.context_plan.preview.text())
        )
        self.welcome.pull_requested.connect(self._pull)
        self.welcome.import_requested.connect(self._import)
        self.discover_page.pull_requested.connect(self._pull)
        self.discover_page.import_requested.connect(self._import)
        self.models_page.import_requested.connect(self._import)
        self.voice_settings.pull_requested.connect(self._pull)
        self.voice_settings.import_requested.connect(self._import)
        self.models_page.chat_requested.connect(self._chat_with)
        if self.chat_page.tools_button is not None:
            self.chat_page.tools_button.manage_requested.connect(lambda: self.show_page("Tools"))
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
        panel.options_edited.connect(self._plan_chat)
        s.chat.opened.connect(lambda _session: self._plan_chat())
        self.chat_page.settings_button.toggled.connect(lambda _on: self._plan_chat())
        self.chat_plan.changed.connect(lambda: panel.show_plan(self.chat_plan.preview))
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

    # the Settings page

    def use_theme(self, theme, flag: str | None = None) -> None:
        """The ``Theme`` the Settings page switches; ``flag``: the ``--theme`` that chose its
        mode for this run (the page shows what is in effect, and why)."""
        self.theme = theme
        self.settings_page.show_theme(theme.mode, flag)

    def _theme_picked(self, mode: str) -> None:
        self.settings.setValue(THEME_KEY, mode)
        if self.theme is not None:
            self.theme.set_mode(mode)

    def _context_picked(self, tokens: int) -> None:
        self.settings.setValue(CONTEXT_KEY, str(tokens))
        self.services.library.preferred_context = tokens
        self.services.hub.plan_context = tokens
        self.chat_page.refresh_model()  # "model default" and the meter say the new length
        self._show_cost()
        self._plan_chat()

    def _show_cost(self, fresh: bool = False) -> None:
        """What the chat's model would take at the chosen context, on the Settings page (asked
        while the page is shown; ``fresh``: again, against the memory free now)."""
        library, chat = self.services.library, self.services.chat
        name = chat.session.conversation.model if chat.session else chat.default_model
        if not self.settings_page.isVisible():
            return
        if not name or library.table.row_of(name) is None or library.is_remote(name):
            return self.context_plan.clear()

        def ask(context: int | None) -> None:
            self.context_plan.ask(name, memory_options(ChatOptions(), context), fresh=fresh)

        library.with_chat_context(name, ask)

    def _plan_chat(self, options: ChatOptions | None = None) -> None:
        """What the open chat's model would take with the chat's settings (``options``: as
        just edited), under them in its settings (asked while they are shown)."""
        panel, library = self.chat_page.settings, self.services.library
        session = self.services.chat.session
        if session is None or not panel.isVisible():
            return
        name = session.conversation.model
        if not name or library.table.row_of(name) is None or library.is_remote(name):
            return self.chat_plan.clear()
        options = options if options is not None else panel.options()
        if options.num_ctx is None and library.cached_details(name) is None:
            return  # the context it would send is known with its details (they ask again)
        self.chat_plan.ask(name, memory_options(options, library.chat_context(name)))

    def _system_changed(self, system: SystemInfo) -> None:
        """The daemon's advice about its llama.cpp build (a GPU it leaves unused), said in a
        banner until dismissed for this session, and on the Server page."""
        self._advice_command = system.advice_command
        self.copy_advice.setVisible(bool(self._advice_command))
        self.build_advice.show_text(system.build_advice, "warning")
        self.server_page.show_system(system)

    def _offline_changed(self, offline: bool) -> None:
        self.offline.show_offline(offline)
        self.welcome.set_offline(offline)

    def _models_changed(self, models: tuple[InstalledModel, ...]) -> None:
        self.chat_page.show_welcome(not models)
        if not models:
            self.services.hub.check_online()  # the first-run page must not offer dead buttons
        default = self.choice.models_changed([m.name for m in models])
        if default is not None:
            self.server_page.set_model(default)

    def _model_details(self, details) -> None:
        """Details of the open chat's model reach its settings (no template, Think)."""
        self.chat_page.settings.show_model(details)
        self._plan_chat()

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
            chosen, _ = open_file_name(self, "Import a GGUF model", "GGUF (*.gguf)")
            path = Path(chosen) if chosen else None
        name = ask_import_name(self, path) if path is not None else None
        if name and path is not None:
            self.services.downloads.import_file(name, path)
            self.message(f"Importing {path.name} as {name}…")

    def _download_finished(self, name: str) -> None:
        self.message(f"{name} is ready.")
        self.choice.download_finished(name)

    def _chat_with(self, name: str) -> None:
        self.show_page("Chat")
        self.choice.chat_with(name)

    # remembering

    def _restore(self) -> None:
        restore_place(self, self.settings)
        self.choice.restore()

    def save_state(self) -> None:
        remember_place(self, self.settings)
        self.choice.save()
        self.settings.sync()

    def quit_app(self) -> None:
        """Ctrl+Q: quit as the user chose (the first time a note asks); the state is saved
        as the app leaves."""
        self.quitting.quit()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Hides to the tray, or quits as Ctrl+Q does; closes once the app is leaving."""
        self.save_state()
        if self.quitting.let_close():
            super().closeEvent(event)
        else:
            event.ignore()
