"""Getting models in the real app against a real daemon pulling from a local stand-in for
Hugging Face: the first-run page's one-click download, Discover's search with fit badges, and
the Downloads page's progress, pause, resume and cancel, for pulls that belong to the daemon
and outlive the window.
"""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QMessageBox

from localllm.app.gui.state.fit import Fit
from localllm.daemon.client import Client
from tests.support.gui_e2e import GuiDaemon, open_app
from tests.support.local_hub import LocalHub
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

TINY, SLOW, HUGE = "local/Tiny-GGUF", "local/Slow-GGUF", "local/Huge-GGUF"
RATE = 1_000_000  # bytes/s: the slow model takes about 4 s, time enough to pause it


def catalog_entry(name: str, repo: str, quant: str) -> dict:
    return {
        "name": name,
        "aliases": [],
        "repo": repo,
        "quant": quant,
        "kind": "chat",
        "parameter_size": "1M",
        "size": 500_000,
        "description": "a tiny test model",
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("hub-files")
    small = write_tiny_model(root / "q8.gguf", file_type="Q8_0", seed=3).read_bytes()
    slow = write_tiny_model(root / "slow.gguf", n_embd=256, seed=4).read_bytes()
    return small, slow


@pytest.fixture(scope="module")
def hub(files):
    small, slow = files
    with LocalHub() as hub:
        hub.add_repo(TINY, {"README.md": b"# tiny", "Tiny-Q8_0.gguf": small})
        hub.add_repo(SLOW, {"Slow-F16.gguf": slow})
        hub.add_repo(HUGE, {"Huge-Q8_0.gguf": small, "Huge-F16.gguf": small})
        hub.report_size(HUGE, "Huge-F16.gguf", 5 * 10**12)  # 5 TB: too large anywhere
        yield hub


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, hub):
    root = tmp_path_factory.mktemp("gui-pulls")
    catalog = root / "catalog.json"
    entries = [catalog_entry("qwen:0.5b", TINY, "Q8_0"), catalog_entry("qwen:7b", SLOW, "F16")]
    catalog.write_text(json.dumps({"version": 1, "models": entries}))
    env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_CATALOG": str(catalog)}
    running = GuiDaemon(root, env=env)
    yield running
    running.stop()


@pytest.fixture
def client(daemon):
    with Client(daemon.url) as client:
        yield client
        for pull in client.pulls():
            client.cancel_pull(pull.name)
        for model in client.list_models():
            client.delete(model.name)


@pytest.fixture
def window(qtbot, daemon, client, tmp_path):
    _services, shown = open_app(qtbot, daemon.gateway(), tmp_path)
    yield shown
    shown.services.shutdown()


def _installed(client) -> set[str]:
    return {m.name for m in client.list_models()}


def test_first_run_offers_models_sized_for_this_machine_and_pulls_in_one_click(qtbot, window):
    qtbot.waitUntil(lambda: window.chat_page.currentWidget() is window.welcome, timeout=10_000)
    welcome = window.welcome
    qtbot.waitUntil(lambda: "RAM" in welcome.machine.text(), timeout=10_000)
    assert window.services.hub.system.ram_total > 0  # the daemon's view of this machine
    button = welcome.buttons["qwen:0.5b"]
    button.click()
    assert not button.isEnabled()
    with qtbot.waitSignal(window.services.downloads.finished, timeout=30_000) as finished:
        pass
    assert finished.args == ["qwen:0.5b"]
    qtbot.waitUntil(lambda: window.chat_page.currentWidget() is not window.welcome, timeout=10_000)
    qtbot.waitUntil(
        lambda: window.chat_page.model_picker.currentText() == "qwen:0.5b", timeout=10_000
    )


def test_discover_searches_shows_fit_badges_and_pulls(qtbot, window, client):
    window.show_page("Discover")
    page, hub = window.discover_page, window.services.hub
    qtbot.waitUntil(lambda: hub.system is not None, timeout=10_000)
    qtbot.keyClicks(page.query, "huge")
    qtbot.waitUntil(lambda: hub.repos.rowCount() == 1, timeout=10_000)  # typing searches
    assert hub.repos.item(0).repo == HUGE
    page.repos.selectRow(0)
    qtbot.waitUntil(lambda: hub.files.rowCount() == 2, timeout=10_000)
    badges = {f.quant: hub.files.fit(f) for f in hub.files.items()}
    assert badges["Q8_0"] in (Fit.VRAM, Fit.RAM) and badges["F16"] is Fit.TOO_LARGE
    assert [f.quant for f in hub.files.items() if f.recommended] == ["Q8_0"]
    page.files.selectRow(0)  # smallest first
    assert page.pull_button.text().startswith("Download Q8_0")
    with qtbot.waitSignal(window.services.downloads.finished, timeout=30_000):
        page.pull_button.click()
    assert "hf.co/local/huge-gguf:q8_0" in _installed(client)
    qtbot.waitUntil(
        lambda: window.services.library.table.row_of("hf.co/local/huge-gguf:q8_0") is not None,
        timeout=10_000,
    )


def test_a_pull_shows_progress_pauses_and_resumes(qtbot, window, client, hub, files):
    hub.reset_counters()
    hub.set_throttle(SLOW, "Slow-F16.gguf", RATE)
    size = len(files[1])
    downloads, page = window.services.downloads, window.downloads_page
    window.show_page("Downloads")
    window.discover_page.pull_requested.emit("qwen:7b")
    qtbot.waitUntil(lambda: downloads.table.rowCount() == 1, timeout=10_000)
    qtbot.waitUntil(lambda: downloads.table.item(0).completed > size // 5, timeout=30_000)
    row = downloads.table.item(0)
    assert row.state == "running" and row.total == size and row.speed > 0
    assert downloads.poll_interval_ms == 10 * 200  # its own stream reports it: no need to poll
    assert row.eta is not None and "MB" in downloads.table.index(0, 1).data()
    page.table.selectRow(0)
    assert page.pause.isEnabled() and not page.resume.isEnabled()
    page.pause.click()
    qtbot.waitUntil(lambda: downloads.table.item(0).state == "paused", timeout=20_000)
    assert wait_for(lambda: [p.state for p in client.pulls()] == ["paused"], timeout=10)
    [paused] = client.pulls()
    assert 0 < paused.completed < paused.total
    qtbot.waitUntil(page.resume.isEnabled)
    hub.set_throttle(SLOW, "Slow-F16.gguf", None)
    with qtbot.waitSignal(downloads.finished, timeout=30_000):
        page.resume.click()
    assert downloads.table.item(0).state == "done" and "qwen:7b" in _installed(client)
    assert hub.bytes_served(SLOW, "Slow-F16.gguf") < 1.5 * size  # resumed, not restarted


def test_pulls_belong_to_the_daemon_and_outlive_the_window(qtbot, daemon, client, hub, tmp_path):
    hub.set_throttle(SLOW, "Slow-F16.gguf", RATE / 4)
    stream = client.pull("hf.co/local/Slow-GGUF:F16")  # started elsewhere (the CLI, say)
    assert next(stream).status == "pulling manifest"
    stream.close()  # hanging up only stops watching
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    qtbot.waitUntil(lambda: services.downloads.table.rowCount() == 1, timeout=10_000)
    assert services.downloads.table.item(0).name == "hf.co/local/slow-gguf:f16"
    assert services.downloads.poll_interval_ms == 200  # no stream of ours: the list tells
    window.close()
    services.shutdown()
    assert [p.state for p in client.pulls()] == ["running"]

    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    try:
        qtbot.waitUntil(lambda: services.downloads.table.rowCount() == 1, timeout=10_000)
        window.show_page("Downloads")
        page = window.downloads_page
        page.table.selectRow(0)
        qtbot.waitUntil(page.cancel.isEnabled)
        answer = QMessageBox.StandardButton.Yes
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(QMessageBox, "exec", lambda _box: answer)
            page.cancel.click()
        qtbot.waitUntil(lambda: services.downloads.table.rowCount() == 0, timeout=20_000)
        assert client.pulls() == []
    finally:
        hub.set_throttle(SLOW, "Slow-F16.gguf", None)
        services.shutdown()


def test_a_gguf_dropped_on_the_first_run_page_is_imported(
    qtbot, window, client, tiny_model_path, monkeypatch
):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    qtbot.waitUntil(lambda: window.chat_page.currentWidget() is window.welcome, timeout=10_000)
    asked = []
    monkeypatch.setattr(
        "localllm.app.gui.views.main_window.ask_import_name",
        lambda _parent, path: asked.append(path.name) or "dropped",
    )
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tiny_model_path))])
    drop = QDropEvent(
        QPointF(5, 5),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    with qtbot.waitSignal(window.services.downloads.finished, timeout=30_000):
        window.welcome.dropEvent(drop)
    assert asked == [tiny_model_path.name] and "dropped:latest" in _installed(client)
    qtbot.waitUntil(lambda: window.chat_page.currentWidget() is not window.welcome, timeout=10_000)
    assert window.services.downloads.table.item(0).state == "done"
