"""Models already on this computer, in the real app against a real daemon: a GGUF in a fake
Hugging Face cache shows up under "Found on this computer", its Add button links it into the
store (the same inode, no second copy on disk), and it then answers in a chat."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from localllm.model_registry.store import LayerType, Store
from tests.support.gui_e2e import GuiDaemon, open_app
from tests.support.other_apps import hf_cache_model

pytestmark = pytest.mark.slow

NAME = "tiny-chat:q8_0"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("gui-import")
    hf_cache_model(root / "hf", "someone/Tiny-Chat-GGUF", "Tiny-Chat-Q8_0.gguf", seed=7)
    running = GuiDaemon(root, env={"HF_HUB_CACHE": str(root / "hf"), "HOME": str(root / "home")})
    yield running
    running.stop()


def _disk_kib(*paths: Path) -> int:
    out = subprocess.run(["du", "-skc", *map(str, paths)], capture_output=True, text=True)
    return int(out.stdout.splitlines()[-1].split()[0])  # a file linked twice counts once


def test_a_model_in_the_hugging_face_cache_is_linked_in_and_chats(qtbot, daemon, tmp_path):
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    try:
        qtbot.waitUntil(lambda: services.library.loaded, timeout=20_000)
        window.show_page("Models")
        panel = window.found_panel
        qtbot.waitUntil(lambda: NAME in panel.buttons, timeout=30_000)
        facts = panel.rows[NAME].details.text()
        assert "Hugging Face cache" in facts and "link: no copy" in facts
        hf, store_dir = daemon.root / "hf", daemon.root / "store"
        before = _disk_kib(hf, store_dir)

        with qtbot.waitSignal(services.found.added, timeout=60_000):
            qtbot.mouseClick(panel.buttons[NAME], Qt.MouseButton.LeftButton)

        store = Store(store_dir)
        manifest = store.read_manifest(NAME)
        [layer] = [x for x in manifest.layers if x.media_type is LayerType.MODEL]
        snapshot = next(hf.rglob("Tiny-Chat-Q8_0.gguf"))
        assert os.stat(store.layout.blob_path(layer.digest)).st_ino == os.stat(snapshot).st_ino
        assert _disk_kib(hf, store_dir) - before < 64  # no second copy of the weights
        qtbot.waitUntil(lambda: services.library.table.row_of(NAME) is not None, timeout=20_000)
        qtbot.waitUntil(lambda: panel.buttons[NAME].text() == "Added", timeout=20_000)  # from
        assert not panel.buttons[NAME].isEnabled()  # "Adding…", disabled too, on a busy machine

        window._chat_with(NAME)
        chat = services.chat
        qtbot.waitUntil(
            lambda: chat.session is not None and chat.session.conversation.model == NAME
        )
        options = replace(chat.session.conversation.options, num_predict=4)
        chat.update_settings(replace(chat.session.conversation, options=options))
        with qtbot.waitSignal(chat.reply_finished, timeout=60_000) as finished:
            assert chat.send("Hello")
        reply = finished.args[0]
        assert reply.role == "assistant" and reply.content and not reply.error
    finally:
        services.shutdown()


def test_import_gguf_links_the_chosen_file_too(qtbot, daemon, tmp_path):
    """The Import GGUF… button and a dropped file: the local daemon links the file in rather
    than taking an uploaded copy."""
    from localllm.model_registry.tiny_gguf import write_tiny_model

    source = write_tiny_model(daemon.root / "Chosen-Q8_0.gguf", seed=8)
    services, _window = open_app(qtbot, daemon.gateway(), tmp_path, window=False)
    try:
        qtbot.waitUntil(lambda: services.library.loaded, timeout=20_000)
        with qtbot.waitSignal(services.downloads.finished, timeout=60_000):
            services.downloads.import_file("chosen", source)
        download = services.downloads.state.get("chosen")
        assert download.state == "done" and download.completed == source.stat().st_size
        store = Store(daemon.root / "store")
        [layer] = [
            x for x in store.read_manifest("chosen").layers if x.media_type is LayerType.MODEL
        ]
        assert os.stat(store.layout.blob_path(layer.digest)).st_ino == os.stat(source).st_ino
    finally:
        services.shutdown()
