"""Every service the window uses, built from one gateway and one data directory.

Made once at start-up and handed to the window (no module-level state): two worker pools
(the network, with room for long streams; the disk, one thread so history writes keep their
order), and the cross-service wiring that is not any single page's business.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject

from localllm.app.gui.services.chat import ChatController
from localllm.app.gui.services.chat_tools import ChatTools
from localllm.app.gui.services.daemon_monitor import DaemonMonitor
from localllm.app.gui.services.documents import DocumentsService
from localllm.app.gui.services.downloads import DownloadService
from localllm.app.gui.services.found_models import FoundModels
from localllm.app.gui.services.hub import HubService
from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.services.presets import PresetService
from localllm.app.gui.services.server import ServerService
from localllm.app.gui.services.voice import VoiceService
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.workers import Workers

__all__ = ["Services", "build_services"]

HISTORY_FILE = "chats.sqlite3"
PRESETS_FILE = "presets.json"
DOCUMENTS_FOLDER = "documents"  # one index per chat with documents


@dataclass(eq=False)
class Services:
    gateway: Gateway
    net: Workers
    disk: Workers
    monitor: DaemonMonitor
    library: ModelLibrary
    downloads: DownloadService
    hub: HubService
    server: ServerService
    chat: ChatController
    presets: PresetService
    found: FoundModels  # models already on this computer, in other apps' folders
    documents: DocumentsService
    tools: ChatTools
    voice: VoiceService  # speech to text (and the voices), the Settings page's Voice choices
    _held: list[str] = field(default_factory=list)  # pulls to resume after a restart

    def start(self) -> None:
        """Read the chat list and begin watching the daemon; returns at once."""
        self.chat.load()
        self.presets.load()
        self.tools.load()
        self.monitor.start()

    def shutdown(self) -> None:
        self.monitor.stop()
        self.downloads.stop()
        self.chat.shutdown()
        self.documents.shutdown()
        self.tools.shutdown()
        self.net.shutdown(wait_ms=200)
        self.disk.shutdown(wait_ms=3000, drop_queued=False)  # the last history writes land

    def wait_for_workers(self, wait_ms: int = 10_000) -> bool:
        """After ``shutdown``, as the app exits: until no worker thread runs (each pool at
        most ``wait_ms``). A job that outlived ``shutdown``'s short wait (a slow daemon, a busy
        machine) and finished while Python tore the app down crashed the exit; False if one
        still runs."""
        pools = (self.net.wait, self.disk.wait, self.documents.wait)
        return all([wait(wait_ms) for wait in pools])

    def _hold_pulls(self, switching: bool) -> None:
        """A local-network switch restarts the daemon, which pauses its pulls on the way
        down: resume the ones that were running once it is back."""
        if switching:
            held = ("queued", "running")
            self._held = [d.name for d in self.downloads.state.items() if d.state in held]
            return
        self.downloads.resume_paused(self._held)
        self._held = []

    def _daemon_up(self) -> None:
        self.library.refresh()
        self.downloads.start()
        self.hub.load_system()
        self.hub.load_catalog()
        self.server.refresh()


def build_services(
    gateway: Gateway,
    data_dir: Path,
    parent: QObject | None = None,
    *,
    autostart: bool = True,
    poll_ms: int = 3000,
    remember_lan: Callable[[bool], None] | None = None,
    remember_port: Callable[[int], None] | None = None,
) -> Services:
    net = Workers(max_threads=12, parent=parent)
    disk = Workers(max_threads=1, parent=parent)
    tools = ChatTools(gateway, net, Path(data_dir), parent)
    monitor = DaemonMonitor(gateway, net, interval_ms=poll_ms, autostart=autostart, parent=parent)
    library = ModelLibrary(gateway, net, parent)
    services = Services(
        gateway=gateway,
        net=net,
        disk=disk,
        monitor=monitor,
        library=library,
        downloads=DownloadService(gateway, net, poll_ms=min(poll_ms, 1500), parent=parent),
        hub=HubService(gateway, net, parent),
        server=ServerService(gateway, net, monitor, remember_lan, parent, remember_port),
        chat=ChatController(gateway, net, disk, Path(data_dir) / HISTORY_FILE, parent, tools),
        presets=PresetService(Path(data_dir) / PRESETS_FILE, disk, parent),
        found=FoundModels(gateway, net, parent),
        documents=DocumentsService(
            gateway,
            net,
            disk,
            Path(data_dir) / HISTORY_FILE,
            Path(data_dir) / DOCUMENTS_FOLDER,
            parent,
        ),
        tools=tools,
        voice=VoiceService(gateway, net, library, parent),
    )
    services.chat.context_for = services.library.chat_context
    services.chat.context_ready = services.library.with_chat_context
    services.found.added.connect(lambda _name: services.library.refresh())
    services.hub.system_changed.connect(services.library.table.set_system)  # fit badges
    services.monitor.came_up.connect(services._daemon_up)
    services.server.switching.connect(services._hold_pulls)
    services.downloads.finished.connect(lambda _name: services.library.refresh())
    services.library.changed.connect(lambda _models: services.documents.models_changed())
    services.chat.reply_started.connect(services.documents.reply_started)
    services.chat.deleted.connect(services.documents.forget)
    services.server.remotes.models_changed.connect(services.library.refresh)
    return services
