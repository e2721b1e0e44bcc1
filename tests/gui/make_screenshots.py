"""Screenshots of every page of the real app, for the README: ``assets/screenshots/*.png``.

Runs the app as users do (``app.gui.main.open_window``, the xcb platform, a real X server)
against a real daemon on a free port with a generated model (random weights: its replies are
nonsense, which the README says) and a local stand-in for Hugging Face, so it needs no network
and touches none of your own models or chats. Run it from the repository root:

    .venv/bin/python -m tests.gui.make_screenshots            # starts Xvfb itself if needed
    .venv/bin/python -m tests.gui.make_screenshots --out /tmp/shots --keep-open
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZE = (1200, 760)
GB = 1_000_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    parser.add_argument("--display", default=":99", help="the Xvfb display to start if needed")
    args = parser.parse_args(argv)
    xvfb = _ensure_display(args.display)
    try:
        with tempfile.TemporaryDirectory(prefix="localllm-shots-") as folder:
            return Shooter(Path(folder), args.out).run()
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(10)


def _ensure_display(display: str) -> subprocess.Popen | None:
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    if os.environ.get("DISPLAY"):
        return None
    if shutil.which("Xvfb") is None:
        raise SystemExit("no DISPLAY and no Xvfb: install xvfb (apt-get install xvfb)")
    screen = f"{SIZE[0] + 80}x{SIZE[1] + 40}x24"
    process = subprocess.Popen(["Xvfb", display, "-screen", "0", screen, "-nolisten", "tcp"])
    os.environ["DISPLAY"] = display
    time.sleep(1.0)
    return process


class Shooter:
    def __init__(self, folder: Path, out: Path):
        self.folder, self.out = folder, out
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
        return 0

    # the world the app sees

    def _publish(self, hub) -> None:
        from model_registry.tiny_gguf import write_tiny_model

        models = self.folder / "hub-files"
        models.mkdir()
        small = write_tiny_model(models / "q8.gguf", file_type="Q8_0", seed=3).read_bytes()
        big = write_tiny_model(models / "big.gguf", n_embd=256, seed=4).read_bytes()
        self.big_size = len(big)
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
        hub.set_throttle("local/slow", "Slow-Q4_K_M.gguf", self.big_size / 40)
        hub.set_throttle("local/slower", "Slower-Q4_K_M.gguf", self.big_size / 12)

    def _daemon(self, hub):
        from tests.support.gui_e2e import GuiDaemon

        catalog = self.folder / "catalog.json"
        entries = [
            _entry("llama3.2:3b", "local/slow"),
            _entry("qwen:7b", "local/slower"),
        ]
        catalog.write_text(json.dumps({"version": 1, "models": entries}))
        env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_CATALOG": str(catalog)}
        daemon = GuiDaemon(self.folder / "daemon", env=env)
        os.environ.update(daemon.env)  # a daemon the app restarts finds the same files
        return daemon

    # the app

    def _shoot(self, daemon, hub) -> None:
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        from app.gui.main import AppConfig, open_window
        from tests.support.gui_e2e import prefs_in

        app = QApplication(["localllm"])
        config = AppConfig(daemon.settings(), history_dir=self.folder / "app", theme="light")
        window, _tray = open_window(app, daemon.gateway(), config, prefs_in(self.folder))
        window.setGeometry(20, 20, *SIZE)
        self.app, self.window = app, window
        failures: list[BaseException] = []

        def tour() -> None:
            try:
                self._tour()
            except BaseException as error:  # reported after the event loop ends
                failures.append(error)
            app.quit()  # as a user quits: the services shut down on the way out

        QTimer.singleShot(0, tour)
        app.exec()
        window.deleteLater()  # Qt's objects go while Qt still runs, not at interpreter exit
        app.processEvents()
        del self.window
        if failures:
            raise failures[0]

    def _tour(self) -> None:
        window = self.window
        services = window.services

        self.wait(lambda: window.chat_page.currentWidget() is window.welcome)
        self.wait(lambda: services.hub.system is not None)
        self.snap("first-run")

        self._import_model()
        self.wait(lambda: window.chat_page.model_picker.currentText() == "tiny-demo:latest")
        self._chat()
        self.snap("chat")
        self._picture_chat()
        self.snap("chat-picture")

        window.show_page("Models")
        page = window.models_page
        page.table.selectRow(0)
        self.wait(lambda: page.tabs.count() == 6)
        self.snap("models")

        window.show_page("Discover")
        discover = window.discover_page
        discover.query.setText("gguf")
        discover.search_now()
        self.wait(lambda: services.hub.repos.rowCount() == 4)
        discover.repos.selectRow(_row(discover.repos, "ggml-org/gemma-3-12b-it-GGUF"))
        self.wait(lambda: services.hub.files.rowCount() == 4)
        discover.files.selectRow(1)
        self.snap("discover")

        self._downloads()
        self.snap("downloads")

        window.show_page("Server")
        self.wait(lambda: services.server.running.rowCount() == 2)  # the demo, and its eyes
        self.wait(lambda: "/api/chat" in window.server_page.log.toPlainText())
        self.snap("server")

        page = window.server_page
        page.lan.click()  # restarts the daemon on every interface, with an API key
        self.wait(lambda: page.api_key.text() != "", timeout=60)
        page.show_key.setChecked(True)
        self.snap("server-lan")

        self._dark()
        window.show_page("Chat")
        self.snap("chat-dark")
        services.downloads.cancel("qwen:7b")
        services.downloads.cancel("llama3.2:3b")
        self.pause(1.0)

    def _dark(self) -> None:
        """What the app does when the system switches to dark."""
        from app.gui.theme import Theme

        app, window = self.app, self.window
        theme = Theme(app, "dark")
        theme.changed.connect(lambda _d: window.icons.set_color(app.palette().windowText().color()))
        theme.changed.connect(window.retheme)
        theme.apply()

    def _import_model(self) -> None:
        from model_registry.tiny_gguf import write_tiny_model

        path = write_tiny_model(self.folder / "tiny-demo.gguf", n_embd=128, n_layer=4, seed=7)
        self.window.services.downloads.import_file("tiny-demo", path)
        self.wait(lambda: self.window.services.library.table.rowCount() == 1)

    def _chat(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        chat, page = self.window.services.chat, self.window.chat_page
        page.settings_button.setChecked(True)
        page.settings.system_prompt.setPlainText("You are a concise assistant.")
        page.settings.temperature.setValue(0.7)
        page.settings.max_tokens.setValue(60)
        page.settings.flush()
        for question in ("Write a haiku about running models at home.", "Now explain it."):
            QTest.keyClicks(page.composer.editor, question)
            QTest.keyClick(page.composer.editor, Qt.Key.Key_Return)
            self.wait(lambda: chat.session.messages and not chat.session.streaming)
            self.pause(0.3)

    def _picture_chat(self) -> None:
        """A model that sees (the tiny model with a tiny projector), asked about a picture."""
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QColor, QImage, QPainter
        from PySide6.QtTest import QTest

        from model_registry.importer import import_gguf
        from model_registry.store import Store
        from model_registry.tiny_gguf import write_tiny_model
        from model_registry.tiny_projector import write_tiny_projector

        model = write_tiny_model(self.folder / "eyes.gguf", seed=9)
        projector = write_tiny_projector(self.folder / "mmproj-eyes.gguf")
        import_gguf(
            Store(Path(os.environ["LOCALLLM_MODELS"])), "tiny-eyes", model, projector=projector
        )
        services, page = self.window.services, self.window.chat_page
        services.library.refresh()
        self.wait(lambda: services.library.table.row_of("tiny-eyes:latest") is not None)
        services.chat.new_chat("tiny-eyes:latest")
        self.wait(lambda: services.chat.session.conversation.model == "tiny-eyes:latest")
        row = services.library.table.row_of("tiny-eyes:latest")
        page.model_picker.setCurrentIndex(row)
        page.model_picker.activated.emit(row)
        self.wait(lambda: page.composer.attach.isVisible())
        page.settings.max_tokens.setValue(40)
        page.settings.flush()
        picture = QImage(480, 320, QImage.Format.Format_RGB32)
        picture.fill(QColor("#87ceeb"))  # a sky, a sun and a hill
        painter = QPainter(picture)
        painter.setBrush(QColor("#ffcc33"))
        painter.drawEllipse(330, 40, 90, 90)
        painter.setBrush(QColor("#4c9a2a"))
        painter.drawEllipse(-120, 200, 720, 300)
        painter.end()
        path = self.folder / "hill.png"
        picture.save(str(path))
        page.composer.add_images([path])
        QTest.keyClicks(page.composer.editor, "What is in this picture?")
        QTest.keyClick(page.composer.editor, Qt.Key.Key_Return)
        chat = services.chat
        self.wait(lambda: len(chat.session.messages) == 2 and not chat.session.streaming)

    def _downloads(self) -> None:
        downloads, page = self.window.services.downloads, self.window.downloads_page
        self.window.show_page("Downloads")
        downloads.pull("llama3.2:3b")
        downloads.pull("qwen:7b")
        self.wait(lambda: _fraction(downloads, "llama3.2:3b") > 0.3, timeout=60)
        downloads.pause("llama3.2:3b")
        self.wait(lambda: _state(downloads, "llama3.2:3b") == "paused")
        self.wait(lambda: _fraction(downloads, "qwen:7b") > 0.75, timeout=60)
        page.table.selectRow(_row(page.table, "llama3.2:3b"))

    # helpers

    def wait(self, predicate: Callable[[], object], timeout: float = 30.0) -> None:
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
        screen = self.window.screen()
        picture = screen.grabWindow(self.window.winId())
        path = self.out / f"{name}.png"
        if not picture.save(str(path), "PNG"):
            raise OSError(f"could not write {path}")
        print(f"{path} ({path.stat().st_size // 1024} KB)")


def _entry(name: str, repo: str) -> dict:
    return {
        "name": name,
        "aliases": [],
        "repo": repo,
        "quant": "Q4_K_M",
        "kind": "chat",
        "parameter_size": "1M",
        "size": 1_000_000,
        "description": "a test model",
    }


def _row(view, text: str) -> int:
    model = view.model()
    return next(r for r in range(model.rowCount()) if model.index(r, 0).data() == text)


def _fraction(downloads, name: str) -> float:
    item = downloads.state.get(name)
    return item.fraction if item is not None else 0.0


def _state(downloads, name: str) -> str:
    item = downloads.state.get(name)
    return item.state if item is not None else ""


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
