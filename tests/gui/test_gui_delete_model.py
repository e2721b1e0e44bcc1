"""Deleting a model from the Models page, in the real app against a real daemon: a GGUF of the
user's, imported by a hard link, is the model deleted. The question says what happens to that
file (it stays where it was; only localllm's link goes), Enter answers Cancel, and deleting it
for real leaves the user's file whole."""

from __future__ import annotations

import hashlib
import os

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from localllm.model_registry.store import LayerType, Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.gui_e2e import GuiDaemon, open_app

pytestmark = pytest.mark.slow

NAME = "mine:latest"


def _answer(qtbot, click, seen: dict) -> None:
    """Once the dialog is up, note what it says and answer it with ``click(box)``."""

    def answer() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox)
        seen["text"] = box.text()
        seen["default"] = box.defaultButton().text()
        seen["icons"] = [not button.icon().isNull() for button in box.buttons()]
        seen["box icon"] = box.icon()
        click(box)
        seen["pressed"] = box.clickedButton().text()

    QTimer.singleShot(0, answer)


def _by_text(box: QMessageBox, text: str):
    return next(button for button in box.buttons() if button.text() == text)


def test_deleting_a_linked_model_defaults_to_cancel_and_keeps_the_users_file(qtbot, tmp_path):
    (tmp_path / "downloads").mkdir()
    mine = write_tiny_model(tmp_path / "downloads" / "Mine-Q8_0.gguf", seed=5)
    digest = hashlib.sha256(mine.read_bytes()).hexdigest()
    daemon = GuiDaemon(tmp_path / "daemon")
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    try:
        qtbot.waitUntil(lambda: services.library.loaded, timeout=20_000)
        with qtbot.waitSignal(services.downloads.finished, timeout=60_000):
            services.downloads.import_file("mine", mine)
        store = Store(tmp_path / "daemon" / "store")
        [layer] = [x for x in store.read_manifest(NAME).layers if x.media_type is LayerType.MODEL]
        blob = store.layout.blob_path(layer.digest)
        assert os.stat(blob).st_ino == os.stat(mine).st_ino  # linked in: the same file
        table = services.library.table
        qtbot.waitUntil(lambda: table.row_of(NAME) is not None, timeout=20_000)
        window.show_page("Models")
        page = window.models_page
        page.table.selectRow(0)
        qtbot.waitUntil(lambda: page.delete_button.isEnabled())

        seen: dict = {}
        _answer(qtbot, lambda box: QTest.keyClick(box, Qt.Key.Key_Return), seen)
        page.delete_button.click()
        assert seen["default"] == "Cancel" and seen["pressed"] == "Cancel"  # Enter keeps it
        assert seen["icons"] == [False, False] and seen["box icon"] == QMessageBox.Icon.NoIcon
        said = " ".join(seen["text"].split())
        assert said.startswith(f"Delete {NAME}?")
        assert "imported it from a file on this computer, that file stays where it was" in said
        assert "only localllm's link to it or copy of it is removed" in said

        _answer(qtbot, lambda box: _by_text(box, "Delete").click(), seen)
        page.delete_button.click()
        assert seen["pressed"] == "Delete"
        qtbot.waitUntil(lambda: table.row_of(NAME) is None, timeout=20_000)
        assert not blob.exists()  # localllm's name for it is gone
        assert hashlib.sha256(mine.read_bytes()).hexdigest() == digest  # the user's file stays
    finally:
        services.shutdown()
        daemon.stop()
