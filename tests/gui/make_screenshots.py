"""Screenshots of every page of the real app, for the README: ``assets/screenshots/*.png``.

Runs the app as users do (``app.gui.main.open_window``, the xcb platform, a real X server)
against a real daemon on a free port (and, for the first run offline, a second one whose Hugging
Face cannot be reached): the chats whose words matter talk to the real-model tier
(Gemma 3 270M, imported as a first-time user imports a GGUF), the others to generated models
(random weights: their replies are nonsense), with the built-in catalog and a local stand-in for
Hugging Face (stopped part way, for Discover offline), so it needs no network and touches none
of your own models or chats. The scenes are in ``screenshot_scenes``. Run it from the
repository root:

    .venv/bin/python -m tests.gui.make_screenshots            # starts Xvfb itself if needed
    .venv/bin/python -m tests.gui.make_screenshots --out /tmp/shots --size 1024x700 --scale 1.5
    .venv/bin/python -m tests.gui.make_screenshots --only voice   # the voice pictures alone
    .venv/bin/python -m tests.gui.make_screenshots --only sizes --size 1024x700  # chat-1024x700...

It takes a few minutes; on a busy machine the waits allow more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZE = (1366, 768)  # logical pixels; --size changes it
GEMMA = "gemma3-270m:latest"
GB = 1_000_000_000
# the catalog models the Downloads picture pulls, served slowly enough to catch mid-download
SLOW_REPOS = {"llama3.2:3b": "local/slow", "qwen2.5:7b": "local/slower"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    parser.add_argument(
        "--display", help="the Xvfb display to start if needed (default: the first free from :99)"
    )
    parser.add_argument("--size", default="1366x768", help="the window, WIDTHxHEIGHT")
    parser.add_argument("--scale", type=float, default=1.0, help="QT_SCALE_FACTOR, e.g. 2")
    parser.add_argument(
        "--only",
        choices=["voice", "sizes"],
        help="make only these pictures (voice: the microphone; sizes: the chat and the Models "
        "page, light and dark, named for --size)",
    )
    args = parser.parse_args(argv)
    global SIZE
    SIZE = tuple(int(n) for n in args.size.lower().split("x"))
    os.environ["QT_SCALE_FACTOR"] = f"{args.scale:g}"
    xvfb = _ensure_display(args.display, args.scale)
    try:
        with tempfile.TemporaryDirectory(prefix="localllm-shots-") as folder:
            return Shooter(Path(folder), args.out, args.only).run()
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(10)


def _ensure_display(display: str | None, scale: float = 1.0) -> subprocess.Popen | None:
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    if os.environ.get("DISPLAY"):
        return None
    display = display or _free_display()
    if shutil.which("Xvfb") is None:
        raise SystemExit("no DISPLAY and no Xvfb: install xvfb (apt-get install xvfb)")
    screen = f"{int((SIZE[0] + 80) * scale)}x{int((SIZE[1] + 40) * scale)}x24"
    process = subprocess.Popen(["Xvfb", display, "-screen", "0", screen, "-nolisten", "tcp"])
    os.environ["DISPLAY"] = display
    time.sleep(1.0)
    return process


def _free_display() -> str:
    """The first display number no X server holds (its lock file), so a second run beside
    another (or beside a test's Xvfb) never photographs someone else's windows."""
    number = 99
    while Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists():
        number += 1
    return f":{number}"


class Shooter:
    def __init__(self, folder: Path, out: Path, only: str | None = None):
        self.folder, self.out, self.only = folder, out, only
        out.mkdir(parents=True, exist_ok=True)

    def run(self) -> int:
        from tests.support.local_hub import LocalHub

        with LocalHub() as hub:
            self._publish(hub)
            daemon = self._daemon(hub)
            try:
                self._shoot(daemon, hub)
            finally:
                daemon.stop()
                for folder in os.environ.get("LOCALLLM_IMPORT_DIRS", "").split(os.pathsep):
                    if folder.startswith("/dev/shm/"):
                        shutil.rmtree(folder, ignore_errors=True)
        return 0

    # the world the app sees

    def _publish(self, hub) -> None:
        from localllm.model_registry.tiny_gguf import write_tiny_model

        models = self.folder / "hub-files"
        models.mkdir()
        small = write_tiny_model(models / "q8.gguf", file_type="Q8_0", seed=3).read_bytes()
        big = write_tiny_model(models / "big.gguf", n_embd=256, seed=4).read_bytes()
        repos = {
            "bartowski/Llama-3.2-3B-Instruct-GGUF": ("Llama-3.2-3B-Instruct", 3.2),
            "unsloth/Qwen3-8B-GGUF": ("Qwen3-8B", 8.2),
            "ggml-org/gemma-3-12b-it-GGUF": ("gemma-3-12b-it", 11.8),
            "bartowski/Meta-Llama-3.1-70B-Instruct-GGUF": ("Meta-Llama-3.1-70B-Instruct", 70.6),
        }
        for repo, (stem, billions) in repos.items():
            quants = {"Q4_K_M": 0.6, "Q5_K_M": 0.71, "Q8_0": 1.07, "F16": 2.0}
            files = {f"{stem}-{q}.gguf": small for q in quants}
            hub.add_repo(repo, {"README.md": b"# model card", **files})
            for quant, bytes_per_parameter in quants.items():
                size = int(billions * GB * bytes_per_parameter)
                hub.report_size(repo, f"{stem}-{quant}.gguf", size)
        # what the catalog names point at (slow, to catch them mid-download; not in a search)
        hub.add_repo("local/slow", {"Slow-Q4_K_M.gguf": big})
        hub.add_repo("local/slower", {"Slower-Q4_K_M.gguf": big})
        hub.set_throttle("local/slow", "Slow-Q4_K_M.gguf", len(big) / 40)
        hub.set_throttle("local/slower", "Slower-Q4_K_M.gguf", len(big) / 12)

    def _daemon(self, hub):
        """The built-in catalog, but the models the Downloads picture pulls come from the
        local hub's slow repositories."""
        from tests.support.gui_e2e import GuiDaemon

        raw = json.loads(
            resources.files("localllm.model_registry").joinpath("catalog.json").read_text()
        )
        for entry in raw["models"]:
            entry["repo"] = SLOW_REPOS.get(entry["name"], entry["repo"])
        catalog = self.folder / "catalog.json"
        catalog.write_text(json.dumps(raw))
        from tests.gui.screenshot_scenes import other_apps

        env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_CATALOG": str(catalog)}
        env.update(other_apps(self.folder))  # models "already on this computer"
        daemon = GuiDaemon(self.folder / "daemon", env=env)
        home = os.environ.get("HOME")
        os.environ.update(daemon.env)  # a daemon the app restarts finds the same files
        if home is not None:
            os.environ["HOME"] = home  # the fake home was the daemon's, for its scan only
        return daemon

    # the app

    def _shoot(self, daemon, hub) -> None:
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        from localllm.app.gui.main import AppConfig, open_window
        from localllm.app.gui.state.quit_choice import QUIT_KEY, QuitChoice
        from tests.support.gui_e2e import prefs_in

        self.app = app = QApplication(["localllm"])
        failures: list[BaseException] = []

        def tour() -> None:
            try:
                if self.only is None:
                    self._offline_first_run()
                config = AppConfig(
                    daemon.settings(), history_dir=self.folder / "app", theme="light"
                )
                prefs = prefs_in(self.folder)
                prefs.setValue(QUIT_KEY, QuitChoice.KEEP.value)  # quitting asks nothing
                self.window, _tray = open_window(app, daemon.gateway(), config, prefs)
                self.window.setGeometry(20, 20, *SIZE)
                if self.only == "voice":
                    self._voice_tour()
                elif self.only == "sizes":
                    self._sizes_tour()
                else:
                    self._tour(hub)
            except BaseException as error:  # reported after the event loop ends
                failures.append(error)
            app.quit()  # as a user quits: the services shut down on the way out

        QTimer.singleShot(0, tour)
        app.exec()
        if hasattr(self, "window"):
            self.window.deleteLater()  # Qt's objects go while Qt runs, not at interpreter exit
            app.processEvents()
            del self.window
        if failures:
            raise failures[0]

    def _offline_first_run(self) -> None:
        """The first run without internet, before the tour: its own daemon (whose Hugging Face
        is a port nobody listens on) and window, closed once photographed."""
        from localllm.app.gui.main import AppConfig, open_window
        from tests.support.daemon import free_port
        from tests.support.gui_e2e import GuiDaemon, prefs_in

        folder = self.folder / "offline"
        dead = {"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}", "HOME": str(folder / "home")}
        daemon = GuiDaemon(folder / "daemon", env=dead)
        try:
            config = AppConfig(daemon.settings(), history_dir=folder / "app", theme="light")
            self.window, _tray = open_window(self.app, daemon.gateway(), config, prefs_in(folder))
            self.window.setGeometry(20, 20, *SIZE)
            welcome = self.window.welcome
            self.wait(lambda: self.window.chat_page.currentWidget() is welcome)
            self.wait(lambda: self.window.offline.isVisible() and welcome.buttons)
            self.wait(lambda: not any(b.isEnabled() for b in welcome.buttons.values()))
            self.snap("first-run-offline")
        finally:
            window = self.window
            self.app.aboutToQuit.disconnect(window.services.shutdown)
            window.services.shutdown()
            window.hide()
            window.deleteLater()
            del self.window
            daemon.stop()

    def _tour(self, hub) -> None:
        from tests.gui import screenshot_scenes as scenes

        window = self.window
        services = window.services

        self.wait(lambda: window.chat_page.currentWidget() is window.welcome)
        self.wait(lambda: services.hub.system is not None)
        self.snap("first-run")

        self._import_model()
        self.wait(lambda: window.chat_page.model_picker.currentText() == GEMMA)
        scenes.first_chat(self)
        first = services.chat.session.conversation.id
        self.snap("chat")
        scenes.advanced_settings(self)
        self.snap("chat-advanced")
        scenes.add_model(self, "tiny-demo", n_embd=128, n_layer=4, seed=7)
        scenes.long_chat(self)
        self.snap("chat-long")
        scenes.chat_memory(self)
        self.snap("chat-memory")
        scenes.picture_chat(self)
        self.snap("chat-picture")
        scenes.documents_chat(self)
        self.snap("chat-documents")

        window.show_page("Models")
        page = window.models_page
        page.table.selectRow(scenes.row_of(page.table, GEMMA))
        self.wait(lambda: page.tabs.count() == 7)
        self.snap("models")
        scenes.model_plan(self, GEMMA)
        self.snap("models-plan")
        scenes.found_models(self)
        self.snap("models-found")

        scenes.discover_search(self)
        self.snap("discover")
        scenes.downloads(self)
        self.snap("downloads")
        scenes.discover_offline(self, hub)
        self.snap("discover-offline")

        scenes.server(self)
        self.snap("server")
        remote = scenes.server_remotes(self)
        try:
            self.snap("server-remotes")
        finally:
            scenes.forget_remotes(self, remote)
        scenes.server_lan(self)
        self.snap("server-lan")
        scenes.tools_chat(self)
        self.snap("chat-tools")

        scenes.dark(self, first)
        self.snap("chat-dark")
        scenes.settings(self)
        self.snap("settings-dark")
        window.show_page("Models")
        self.snap("models-dark")
        self._voice_pictures(("dark", "light"))  # last: Whisper joins the models

    def _sizes_tour(self) -> None:
        """``--only sizes``: the first chat (its settings open) and the Models page at this
        window size, light then dark, as ``chat-WxH[-dark].png`` and ``models-WxH[-dark].png``."""
        from tests.gui import screenshot_scenes as scenes

        window = self.window
        self._import_model()
        self.wait(lambda: window.chat_page.model_picker.currentText() == GEMMA)
        scenes.first_chat(self)
        first = window.services.chat.session.conversation.id
        size, page = f"{SIZE[0]}x{SIZE[1]}", window.models_page
        for theme in ("light", "dark"):
            suffix = f"{size}-dark" if theme == "dark" else size
            if theme == "dark":
                scenes.dark(self, first)
                window.chat_page.settings_button.setChecked(True)
            window.show_page("Chat")
            self.snap(f"chat-{suffix}")
            window.show_page("Models")
            page.table.selectRow(scenes.row_of(page.table, GEMMA))
            self.wait(lambda: page.tabs.count() == 7)
            self.snap(f"models-{suffix}")

    def _voice_tour(self) -> None:
        """``--only voice``: Gemma imported, then the voice pictures."""
        self._import_model()
        self.wait(lambda: self.window.chat_page.model_picker.currentText() == GEMMA)
        self._voice_pictures(("light", "dark"))

    def _voice_pictures(self, themes: tuple[str, ...]) -> None:
        from tests.gui import screenshot_voice as voice

        voice.voice_ready(self)
        for theme in themes:
            voice.use_theme(self, theme)
            suffix = "-dark" if theme == "dark" else ""
            voice.recording(self, GEMMA)
            self.snap(f"chat-voice-recording{suffix}")
            voice.transcript(self)
            self.snap(f"chat-voice-transcript{suffix}")
            voice.read_aloud(self)
            self.snap(f"chat-read-aloud{suffix}")
            voice.stop_reading(self)

    def _import_model(self) -> None:
        """As a first-time user does: Import a GGUF file (the real-model tier's Gemma)."""
        from tests.support.real_model import gemma_path

        self.window.services.downloads.import_file(GEMMA.split(":")[0], gemma_path())
        self.wait(lambda: self.window.services.library.table.rowCount() == 1)

    # helpers

    def wait(self, predicate: Callable[[], object], timeout: float = 60.0) -> None:
        """Generous: the daemon loads models and the machine may be busy."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the app did not get there in {timeout:.0f} s")
            self.pause(0.05)

    def pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.app.processEvents()
            time.sleep(0.01)

    def snap(self, name: str) -> None:
        self.pause(0.6)  # coalesced redraws and debounced searches settle
        window, screen = self.window, self.window.screen()
        if window.width() > SIZE[0] or not screen.geometry().contains(window.frameGeometry()):
            print(f"warning: {name}: the window is {window.width()} px wide (asked {SIZE[0]})")
        picture = screen.grabWindow(window.winId())
        path = self.out / f"{name}.png"
        if not picture.save(str(path), "PNG"):
            raise OSError(f"could not write {path}")
        print(f"{path} ({path.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
