"""Text from a model file, the daemon or a hub shows as text, never as markup: a GGUF whose
architecture and name are a "click to repair" link, and a hub whose file name is one, in the
real app over a real daemon pulling from a local stand-in for Hugging Face.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from localllm.app.gui.state.daemon_health import DaemonState, DaemonStatus
from localllm.app.gui.state.downloads import Download
from tests.support.gui_e2e import GuiDaemon, open_app, tiny_models
from tests.support.local_hub import LocalHub
from tests.support.qt_text import LINK, assert_literal, assert_literal_tooltip, links, shown

pytestmark = pytest.mark.slow

EVIL_REPO = "local/Evil-GGUF"
EVIL_FILE = '<a href="x">click to repair.gguf'  # a hub file name ("/" would make a folder)
CRAFTED = "crafted:latest"


def crafted_gguf(path: Path) -> Path:
    """A GGUF whose architecture, name and license are a link (llama.cpp refuses to load it)."""
    writer = gguf.GGUFWriter(path, LINK)
    writer.add_name(LINK)
    writer.add_license(LINK)
    writer.add_context_length(128)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def hub():
    with LocalHub() as hub:
        hub.add_repo(EVIL_REPO, {EVIL_FILE: b"GGUF" + bytes(60)})
        yield hub


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path, hub):
    root = tmp_path_factory.mktemp("gui-untrusted")
    models = {**tiny_models(tiny_model_path), "crafted": crafted_gguf(root / "crafted.gguf")}
    running = GuiDaemon(root / "d", models, env={"HF_ENDPOINT": hub.endpoint})
    yield running
    running.stop()


@pytest.fixture
def window(qtbot, daemon, tmp_path):
    _services, shown_window = open_app(qtbot, daemon.gateway(), tmp_path)
    qtbot.waitUntil(lambda: shown_window.services.library.loaded, timeout=10_000)
    yield shown_window
    shown_window.services.shutdown()


def _view_row(view, name: str) -> int:
    model = view.model()
    return next(r for r in range(model.rowCount()) if model.index(r, 0).data() == name)


def test_a_models_architecture_and_name_show_literally_on_the_models_page(qtbot, window):
    window.show_page("Models")
    page = window.models_page
    page.table.selectRow(_view_row(page.table, CRAFTED))
    qtbot.waitUntil(lambda: page.tabs.count() == 7, timeout=10_000)
    assert_literal(page.summary, LINK)  # the family is general.architecture
    assert links(shown(page.summary)) == []
    metadata = page.metadata
    values = {
        metadata.item(r, 0).text(): metadata.item(r, 1).text() for r in range(metadata.rowCount())
    }
    assert values["general.name"] == LINK


def test_a_hubs_file_name_in_a_pull_error_shows_literally(qtbot, window):
    """The daemon's 404 lists the quants the hub has: the hub names them."""
    downloads = window.services.downloads
    with qtbot.waitSignal(downloads.error, timeout=30_000) as failed:
        window.discover_page.pull_requested.emit(f"hf.co/{EVIL_REPO}:q4_k_m")
    assert "click to repair" in failed.args[0] and "<a href" in failed.args[0]
    window.show_page("Downloads")
    assert_literal(window.downloads_page.message, '<a href="x">click to repair')


def test_a_failed_load_quoting_the_architecture_is_text_in_the_chat(qtbot, window):
    chat = window.services.chat
    qtbot.waitUntil(lambda: chat.session is not None, timeout=10_000)
    row = window.services.library.table.row_of(CRAFTED)
    window.chat_page.model_picker.setCurrentIndex(row)
    window.chat_page.model_picker.activated.emit(row)
    qtbot.waitUntil(lambda: chat.session.conversation.model == CRAFTED)
    with qtbot.waitSignal(chat.reply_finished, timeout=30_000):
        assert chat.send("hi")
    failed = chat.session.messages[-1]
    assert failed.failed and LINK in failed.error
    transcript = window.chat_page.transcript
    assert LINK in transcript.toPlainText()
    assert all(href.startswith("action:") for href in links(transcript.document()))  # ours


def test_every_place_that_shows_daemon_text_shows_it_as_text(qtbot, window):
    """The same text through each view that shows the daemon's or a hub's words."""
    s = window.services
    s.chat.error.emit(LINK)
    assert_literal(window.chat_page.problem.label, LINK)  # the banner over the message box
    s.server.error.emit(LINK)
    assert_literal(window.server_page.message, LINK)
    s.hub.error.emit(LINK)
    assert_literal(window.discover_page.state, LINK)
    failed = DaemonStatus(DaemonState.FAILED, message=LINK)
    window.indicator.show_status(failed)
    assert_literal(window.indicator.text, LINK)
    assert_literal_tooltip(window.indicator.text, LINK)  # where an elided reason shows whole
    window.server_page.show_status(failed)  # the Server page takes the whole status
    assert_literal(window.server_page.status, LINK)
    welcome = window.welcome
    name = next(iter(welcome.buttons))
    welcome.show_download(Download(name, state="failed", error=LINK))
    assert_literal(welcome.problems[name], LINK)
