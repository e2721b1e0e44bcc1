"""``localllm app``: open the desktop window.

The window appears at once; the daemon check (and, when nothing answers, starting it) happens
in a worker and shows up in the status bar. Configuration is the daemon's own
(``Settings.from_env``: the same data directory, address and API key the CLI and the daemon
use), overridden by the arguments, built here once and handed down; nothing below reads the
environment. The "serve on the local network" choice is remembered in ``QSettings``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from localllm.app.gui.design.wheel_guard import WheelGuard
from localllm.app.gui.icons import Icons
from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.state.daemon_control import DaemonControl
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.system_libraries import qt_platform_problem
from localllm.app.gui.theme import Theme, load_fonts
from localllm.app.gui.views.main_window import THEME_KEY, MainWindow
from localllm.app.gui.views.tray import Tray
from localllm.daemon.client.launcher import connect_url
from localllm.daemon.settings import Settings, parse_host, settings_rows

__all__ = [
    "LAN_KEY",
    "PORT_KEY",
    "AppConfig",
    "lan_memory",
    "launch",
    "open_window",
    "parse_args",
    "port_memory",
    "remembered_lan",
    "remembered_port",
    "run_app",
    "wire_tray",
    "with_remembered_port",
]

ORGANIZATION = "localllm"
LAN_KEY = "server/lan"  # QSettings: serve on the local network at the next start
PORT_KEY = "server/port"  # QSettings: the port chosen on the Server page


@dataclass(frozen=True, slots=True)
class AppConfig:
    settings: Settings = field(default_factory=Settings)
    history_dir: Path | None = None  # where chats are kept; None: the daemon's data directory
    autostart: bool = True
    theme: str | None = None  # None follows the system
    port_fixed: bool = False  # --host or LOCALLLM_HOST named the address: it wins

    @property
    def base_url(self) -> str:
        return connect_url(self.settings)

    @property
    def data_dir(self) -> Path:
        return self.history_dir or self.settings.data_dir


def parse_args(argv: Sequence[str], env: Mapping[str, str] | None = None) -> AppConfig:
    """Arguments over ``LOCALLLM_*`` settings; raises ValueError for a bad value."""
    parser = argparse.ArgumentParser(prog="localllm app", description="Open the desktop app.")
    parser.add_argument("--host", help="daemon address, HOST[:PORT] (default: LOCALLLM_HOST)")
    parser.add_argument("--data-dir", type=Path, help="where chat history is kept")
    parser.add_argument("--no-start", action="store_true", help="never start the daemon")
    parser.add_argument("--theme", choices=("system", "light", "dark"), default="system")
    args, _qt_args = parser.parse_known_args(list(argv))
    settings = Settings.from_env(env)  # None: this process's environment
    if args.host:
        host, port = parse_host(args.host)
        settings = replace(settings, host=host, port=port)
    return AppConfig(
        settings=settings,
        history_dir=args.data_dir,
        autostart=not args.no_start,
        theme=None if args.theme == "system" else args.theme,
        port_fixed=bool(args.host) or "LOCALLLM_HOST" in settings.given,
    )


def run_app(argv: Sequence[str] = ()) -> int:
    """Run the app until it quits; ``argv`` are the options after ``localllm app``."""
    try:
        config = parse_args(argv)
    except ValueError as exc:
        print(f"localllm app: {exc}", file=sys.stderr)
        return 2
    problem = qt_platform_problem(os.environ)
    if problem is not None and QApplication.instance() is None:
        print(f"localllm app: {problem}", file=sys.stderr)
        return 1
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(["localllm", *argv])
    prefs = QSettings(ORGANIZATION, "localllm")
    config = with_remembered_port(config, prefs)
    control = DaemonControl(
        config.settings, lan=remembered_lan(prefs), port_fixed=config.port_fixed
    )
    return launch(app, Gateway.connect(control), config, prefs)


def remembered_lan(prefs: QSettings) -> bool:
    """Whether the user last left "serve on the local network" on."""
    return str(prefs.value(LAN_KEY, "false")).lower() == "true"


def lan_memory(prefs: QSettings) -> Callable[[bool], None]:
    """Remember the switch once the daemon runs with it."""
    return lambda on: prefs.setValue(LAN_KEY, "true" if on else "false")


def remembered_port(prefs: QSettings) -> int | None:
    """The port last chosen on the Server page, if any."""
    text = str(prefs.value(PORT_KEY, "") or "")
    return int(text) if text.isdigit() and 0 < int(text) < 65536 else None


def port_memory(prefs: QSettings) -> Callable[[int], None]:
    """Remember the port once the daemon runs on it."""
    return lambda port: prefs.setValue(PORT_KEY, str(port))


def with_remembered_port(config: AppConfig, prefs: QSettings) -> AppConfig:
    """The daemon's port as last chosen in the app, unless the address was given."""
    port = remembered_port(prefs)
    if port is None or config.port_fixed:
        return config
    return replace(config, settings=replace(config.settings, port=port))


def launch(app: QApplication, gateway: Gateway, config: AppConfig, settings: QSettings) -> int:
    """Open the window over ``gateway`` and run until the user quits."""
    window, tray = open_window(app, gateway, config, settings)  # held: Qt must not delete it
    code = app.exec()
    if tray is not None:
        tray.hide()
    window.services.wait_for_workers()  # no worker thread may outlive the app
    return code


def open_window(
    app: QApplication, gateway: Gateway, config: AppConfig, settings: QSettings
) -> tuple[MainWindow, Tray | None]:
    """Theme, services, window and tray, shown and started; returns without waiting for the
    daemon."""
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName("localllm")
    app.setDesktopFileName("localllm")
    icons = Icons()
    app.setWindowIcon(icons.app_icon())
    load_fonts(app)
    chosen = str(settings.value(THEME_KEY, "system"))  # the Settings page's choice
    forced = config.theme or (chosen if chosen in ("light", "dark") else None)
    theme = Theme(app, forced)
    theme.changed.connect(lambda _dark: icons.set_color(app.palette().windowText().color()))
    theme.apply_palette()  # the stylesheet comes once the window is built: one polish, not many
    icons.set_color(app.palette().windowText().color())  # drawn once, in the theme's colour

    services = build_services(
        gateway,
        config.data_dir,
        app,
        autostart=config.autostart,
        remember_lan=lan_memory(settings),
        remember_port=port_memory(settings),
    )
    window = MainWindow(services, settings, icons, config.base_url)
    WheelGuard(app, parent=window)  # the wheel scrolls pages, not unfocused fields
    window.use_theme(theme, config.theme)
    window.settings_page.environment.show_rows(settings_rows(config.settings))
    theme.changed.connect(window.retheme)
    theme.apply()
    tray = _tray(window, icons, services)
    app.aboutToQuit.connect(services.shutdown)
    window.show()
    services.start()
    return window, tray


def _tray(window: MainWindow, icons: Icons, services) -> Tray | None:
    if not QSystemTrayIcon.isSystemTrayAvailable():
        return None
    tray = wire_tray(window, icons.tray_icon(), services)
    tray.show()
    return tray


def wire_tray(window: MainWindow, icon: QIcon, services) -> Tray:
    """The tray icon over ``window``: it brings the window back, quits keeping the daemon
    serving or stops everything; from now on closing the window hides it there."""
    tray = Tray(icon, services.server, window)

    def bring_back() -> None:
        window.showNormal()
        window.raise_()
        window.activateWindow()

    tray.open_requested.connect(bring_back)
    tray.quit_requested.connect(window.quitting.keep_serving)
    tray.stop_requested.connect(window.quitting.stop_everything)
    window.quitting.tray = tray
    return tray


if __name__ == "__main__":
    sys.exit(run_app(sys.argv[1:]))
