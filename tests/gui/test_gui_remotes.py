"""Remotes in the app, against the stand-in client: the Server page's section (its table, the
Add dialog with the key kept out of the remotes file, Remove after asking), remote models on
the Models page and in the chat's picker, and the Qt-free checks and words behind them. The
same over real daemons is in ``test_gui_e2e_remotes.py``."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from localllm.app.gui.item_models.daemon_tables import InstalledModelsModel, RunningModelsModel
from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.services.remotes import RemotesService
from localllm.app.gui.state import wire
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.remotes import KEY_IN_ENV, KEY_IN_KEYRING, add_request, remote_status
from localllm.app.gui.views.models_page import ModelsPage
from localllm.app.gui.views.remotes_section import RemotesSection
from localllm.app.gui.workers import Workers
from localllm.daemon.api.remotes import ReplicaInfo
from tests.support.cli import MODEL, FakeClient, running_model
from tests.support.fake_remotes import remote_info

DOWN = ReplicaInfo(url="http://127.0.0.1:9", healthy=False, error="connection refused")


@pytest.mark.parametrize(
    ("name", "urls", "source", "key", "problem"),
    [
        ("", "http://a:1", "none", "", "Give the remote a name"),
        ("gpu", "  ", "none", "", "at least one URL"),
        ("gpu", "http://a:1 ftp://b", "none", "", "'ftp://b' is not an http:// or https:// URL"),
        ("gpu", "http://a:1", KEY_IN_KEYRING, " ", "Type the API key"),
        ("gpu", "http://a:1", KEY_IN_ENV, "", "Type the environment variable's name"),
    ],
)
def test_the_add_fields_say_what_to_fix(name, urls, source, key, problem):
    with pytest.raises(ValueError, match=problem):
        add_request(name, urls, "openai", source, key)


def test_the_add_fields_become_the_daemons_request():
    request = add_request(" gpu ", "http://a:1, http://b:2\nhttp://c:3", "ollama", "keyring", "k")
    assert request.name == "gpu" and request.urls == ["http://a:1", "http://b:2", "http://c:3"]
    assert (request.kind, request.api_key, request.api_key_env) == ("ollama", "k", None)
    by_env = add_request("gpu", "http://a:1", "openai", KEY_IN_ENV, "VLLM_KEY")
    assert (by_env.api_key, by_env.api_key_env) == (None, "VLLM_KEY")


def test_health_reads_with_the_reason():
    two = ["http://a:1", "http://b:2"]
    assert remote_status(remote_info("gpu", two)).health_text == "healthy"
    half = remote_info("gpu", two, replicas=[remote_info("x", ["http://a:1"]).replicas[0], DOWN])
    assert remote_status(half).health_text == "healthy (1 of 2)"
    dead = remote_status(
        remote_info("gone", ["http://127.0.0.1:9"], healthy=False, replicas=[DOWN])
    )
    assert dead.health_text == "unreachable: connection refused"
    assert dead.latency_text == "" and remote_status(half).latency_text == "1.5 ms"
    said = DOWN.model_copy(update={"error": "unreachable (ConnectError)"})
    worded = remote_info("gone", [said.url], healthy=False, replicas=[said])
    assert remote_status(worded).health_text == "unreachable (ConnectError)"
    keyed = remote_status(remote_info("k", two, api_key_env="VLLM_KEY"))
    assert keyed.key == "from $VLLM_KEY"


@pytest.fixture
def section(qtbot):
    fake = FakeClient(remote_infos=[remote_info("gpu", ["http://a:1"], ["qwen3-8b"])])
    service = RemotesService(Gateway(fake), Workers())
    view = RemotesSection(service)
    qtbot.addWidget(view)
    service.refresh()
    qtbot.waitUntil(lambda: service.table.rowCount() == 1)
    return fake, service, view


def _cells(service: RemotesService, row: int) -> list[str]:
    table = service.table
    return [table.data(table.index(row, c)) for c in range(table.columnCount())]


def test_the_table_shows_each_remote(section):
    _fake, service, _view = section
    assert _cells(service, 0) == ["gpu", "http://a:1", "gpu/qwen3-8b", "1.5 ms", "0", "healthy"]


def test_add_sends_the_key_to_the_daemon_and_closes(section, qtbot):
    fake, service, view = section
    dialog = view.open_add_dialog()
    dialog.name.setText("box")
    dialog.urls.setText("http://b:1 http://c:1")
    dialog.findChild(type(dialog.key_sources.buttons()[0]), "key-keyring").setChecked(True)
    dialog.key.setText("sk-secret")
    with qtbot.waitSignal(dialog.finished):
        dialog.submit()
    request = fake.calls[-2][1] if fake.calls[-1][0] == "remotes" else fake.calls[-1][1]
    assert request.api_key == "sk-secret" and request.urls == ["http://b:1", "http://c:1"]
    qtbot.waitUntil(lambda: service.table.rowCount() == 2)
    assert service.table.item(1).key == "in the keyring"


def test_a_name_taken_keeps_the_dialog_open_with_the_daemons_words(section, qtbot):
    _fake, _service, view = section
    dialog = view.open_add_dialog()
    dialog.name.setText("gpu")
    dialog.urls.setText("http://b:1")
    dialog.submit()
    qtbot.waitUntil(lambda: "exists already" in dialog.problem.text())
    assert "Pick another name" in dialog.problem.text()
    assert dialog.isVisible() and dialog.buttons.isEnabled()
    dialog.urls.setText("gopher://b")
    dialog.submit()
    assert dialog.problem.text() == "'gopher://b' is not an http:// or https:// URL."


def test_remove_asks_first(section, qtbot, monkeypatch):
    fake, service, view = section
    answers = iter([QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes])
    monkeypatch.setattr(QMessageBox, "exec", lambda _box: next(answers))
    view.table.selectRow(0)
    assert view.remove.isEnabled()
    view.remove.click()
    assert ("remove_remote", "gpu") not in fake.calls
    with qtbot.waitSignal(service.models_changed):
        view.remove.click()
    qtbot.waitUntil(lambda: service.table.rowCount() == 0)
    assert ("remove_remote", "gpu") in fake.calls


def test_remote_models_are_marked_without_local_columns(qtbot, tmp_path):
    far = MODEL.model_copy(update={"name": "gpu/qwen3-8b", "size": 0, "remote": "gpu"})
    table = InstalledModelsModel()
    table.replace([wire.installed(MODEL), wire.installed(far)])
    row = [table.data(table.index(1, c)) for c in range(table.columnCount())]
    assert row == ["gpu/qwen3-8b  · remote gpu", "", "", "", "", "", "", ""]
    assert table.data(table.index(0, 1)) == "4.7 GB"
    running = RunningModelsModel()
    running.replace([wire.running(running_model("gpu/qwen3-8b", remote="gpu"))])
    assert running.data(running.index(0, 1)) == "" and running.data(running.index(0, 2)) == (
        "remote gpu"
    )


def test_the_models_page_offers_only_chat_for_a_remote_model(qtbot, tmp_path):
    far = MODEL.model_copy(update={"name": "gpu/qwen3-8b", "size": 0, "remote": "gpu"})
    fake = FakeClient(models=[MODEL, far])
    services = build_services(Gateway(fake), tmp_path, autostart=False)
    page = ModelsPage(services.library)
    qtbot.addWidget(page)
    services.library.refresh()
    qtbot.waitUntil(lambda: services.library.table.rowCount() == 2)
    page.table.selectRow(0)  # sorted by name: gpu/ before tiny
    assert page.selected().remote == "gpu"
    assert page.chat_button.isEnabled()
    assert not page.delete_button.isEnabled() and not page.copy_button.isEnabled()
    assert "served by the remote" in page.summary.text()
    shows = [call for call in fake.calls if call[0] == "show"]
    assert shows == [("show", "tiny:latest")]  # nothing asked about the remote one
    page.table.selectRow(1)
    assert page.delete_button.isEnabled() and page.copy_button.isEnabled()
    services.shutdown()


def test_a_remote_model_in_use_is_shown_but_never_unloaded(qtbot, tmp_path):
    from PySide6.QtGui import QIcon

    from localllm.app.gui.views.tray import Tray

    fake = FakeClient()
    services = build_services(Gateway(fake), tmp_path, autostart=False)
    records = [running_model("tiny:latest"), running_model("gpu/qwen3-8b", remote="gpu")]
    services.server.running.replace([wire.running(m) for m in records])
    tray = Tray(QIcon(), services.server)
    tray.fill_models()
    actions = {a.text(): a for a in tray.models_menu.actions()}
    assert not actions["gpu/qwen3-8b · remote gpu"].isEnabled()
    local = next(action for text, action in actions.items() if text.startswith("tiny:latest"))
    local.trigger()
    qtbot.waitUntil(lambda: ("unload", "tiny:latest") in fake.calls)
    assert ("unload", "gpu/qwen3-8b") not in fake.calls
    services.shutdown()
