"""``localllm app``: open the desktop window.

The window appears at once; the daemon check (and, when nothing answers, starting it) happens
in a worker and shows up in the status bar. Settings are built here, once, from the arguments
and handed down; nothing below reads the environment.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from app.gui.gateway import DEFAULT_BASE_URL, Gateway, GatewayError
from app.gui.icons import Icons
from app.gui.services.bundle import build_services
from app.gui.theme import Theme
from app.gui.views.main_window import MainWindow
from app.gui.views.tray import Tray

__all__ = ["AppConfig", "launch", "open_window", "parse_args", "run_app"]

ORGANIZATION = "localllm"


@dataclass(frozen=True, slots=True)
class AppConfig:
    base_url: str = DEFAULT_BASE_URL
    data_dir: Path = Path(platformdirs.user_data_dir("localllm", appauthor=False))
    autostart: bool = True
    theme: str | None = None  # None follows the system
    api_key: str | None = None


def parse_args(argv: Sequence[str]) -> AppConfig:
    parser = argparse.ArgumentParser(prog="localllm app", description="Open the desktop app.")
    parser.add_argument("--host", default=DEFAULT_BASE_URL, help="daemon address")
    parser.add_argument("--data-dir", type=Path, help="where chat history is kept")
    parser.add_argument("--no-start", action="store_true", help="never start the daemon")
    parser.add_argument("--theme", choices=("system", "light", "dark"), default="system")
    args, _qt_args = parser.parse_known_args(list(argv))
    host = args.host if "://" in args.host else f"http://{args.host}"
    return AppConfig(
        base_url=host,
        data_dir=args.data_dir or AppConfig.data_dir,
        autostart=not args.no_start,
        theme=None if args.theme == "system" else args.theme,
    )


def run_app(argv: Sequence[str] = ()) -> int:
    """Run the app until it quits; ``argv`` are the options after ``localllm app``."""
    config = parse_args(argv)
    try:
        gateway = Gateway.connect(config.base_url, config.api_key)
    except GatewayError as exc:
        print(f"localllm app: {exc}", file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(["localllm", *argv])
    return launch(app, gateway, config, QSettings(ORGANIZATION, "localllm"))


def launch(app: QApplication, gateway: Gateway, config: AppConfig, settings: QSettings) -> int:
    """Open the window over ``gateway`` and run until the user quits."""
    _window, tray = open_window(app, gateway, config, settings)  # held: Qt must not delete it
    code = app.exec()
    if tray is not None:
        tray.hide()
    return code


def open_window(
    app: QApplication, gateway: Gateway, config: AppConfig, settings: QSettings
) -> tuple[MainWindow, Tray | None]:
    """Theme, services, window and tray, shown and started; returns without waiting for the
    daemon (tests call this with a stand-in gateway)."""
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName("localllm")
    app.setDesktopFileName("localllm")
    icons = Icons()
    app.setWindowIcon(icons.app_icon())
    theme = Theme(app, config.theme)
    theme.changed.connect(lambda _dark: icons.set_color(app.palette().windowText().color()))
    theme.apply()

    services = build_services(gateway, config.data_dir, app, autostart=config.autostart)
    window = MainWindow(services, settings, icons, config.base_url)
    theme.changed.connect(window.retheme)
    window.retheme(theme.dark)
    tray = _tray(window, icons, services)
    app.aboutToQuit.connect(services.shutdown)
    window.show()
    services.start()
    return window, tray


def _tray(window: MainWindow, icons: Icons, services) -> Tray | None:
    if not QSystemTrayIcon.isSystemTrayAvailable():
        return None
    tray = Tray(icons.tray_icon(), services.server, window)
    tray.open_requested.connect(
        lambda: (window.showNormal(), window.raise_(), window.activateWindow())
    )
    tray.quit_requested.connect(window.quit_app)
    tray.show()
    window.hide_to_tray = True
    return tray


if __name__ == "__main__":
    sys.exit(run_app(sys.argv[1:]))
