"""Remotes in the app over real daemons: the app's daemon with an empty store, a second daemon
with the tiny model as its remote, and a URL where nothing listens. Added from the Server
page's dialog (the key into the daemon's key store, never its remotes file), shown healthy or
unreachable with the reason, its model on the Models page and in the chat's picker marked
remote, a chat with it through the app's gateway, and removed after asking."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from localllm.app.gui.state.gateway import ChatTurn
from localllm.app.gui.state.records import ChatDelta
from tests.support.daemon import Daemon, free_port, make_store
from tests.support.gui_e2e import NO_KEYRING, GuiDaemon, open_app

pytestmark = pytest.mark.slow
REMOTE_MODEL = "back/tiny"


@pytest.fixture
def back(tmp_path, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras

    store = make_store(tmp_path / "back", {"tiny": (tiny_model_path, ModelExtras(
        parameters={"num_predict": 6}))})  # fmt: skip
    env = {"PYTHON_KEYRING_BACKEND": NO_KEYRING, "LOCALLLM_CONFIG": str(tmp_path / "bc")}
    with Daemon(store, tmp_path / "back-logs", env=env) as daemon:
        yield daemon


def _add(qtbot, section, name: str, urls: str, key: str = "") -> None:
    dialog = section.open_add_dialog()
    dialog.name.setText(name)
    dialog.urls.setText(urls)
    if key:
        dialog.findChild(type(dialog.key_sources.buttons()[0]), "key-keyring").setChecked(True)
        dialog.key.setText(key)
    with qtbot.waitSignal(dialog.finished, timeout=30_000):
        dialog.submit()


def test_remotes_from_the_server_page(qtbot, tmp_path, back, monkeypatch):
    front = GuiDaemon(tmp_path / "front")
    services, window = open_app(qtbot, front.gateway(), tmp_path)
    page, remotes = window.server_page, services.server.remotes
    try:
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=20_000)
        window.show_page("Server")
        _add(qtbot, page.remotes, "back", back.url)
        _add(qtbot, page.remotes, "gone", f"http://127.0.0.1:{free_port()}", key="sk-hush")
        qtbot.waitUntil(lambda: remotes.table.rowCount() == 2, timeout=10_000)
        rows = {r.name: r for r in remotes.table.items()}
        assert rows["back"].health_text == "healthy" and rows["back"].models == (REMOTE_MODEL,)
        assert rows["back"].latency_text.endswith(" ms")
        assert rows["gone"].health_text.startswith("unreachable")
        assert rows["gone"].health_text != "unreachable"  # with the reason
        assert rows["gone"].key == "in the keyring"
        kept = (front.root / "config" / "remotes.json").read_text()
        assert '"gone"' in kept and "sk-hush" not in kept

        library = services.library  # the remote's model joins the list, marked
        qtbot.waitUntil(lambda: library.table.row_of(REMOTE_MODEL) is not None, timeout=10_000)
        row = library.table.row_of(REMOTE_MODEL)
        assert library.table.data(library.table.index(row, 0)) == f"{REMOTE_MODEL}  · remote back"
        picker = window.chat_page.model_picker
        assert f"{REMOTE_MODEL}  · remote back" in [
            picker.itemText(i) for i in range(picker.count())
        ]
        turns = [ChatTurn("user", "Hello")]
        reply = [e for e in services.gateway.chat(REMOTE_MODEL, turns) if isinstance(e, ChatDelta)]
        assert "".join(d.content for d in reply)

        monkeypatch.setattr(QMessageBox, "exec", lambda _box: QMessageBox.StandardButton.Yes)
        view = page.remotes.table
        view.selectRow(next(r for r in range(2) if view.model().index(r, 0).data() == "back"))
        page.remotes.remove.click()
        qtbot.waitUntil(lambda: remotes.table.rowCount() == 1, timeout=10_000)
        qtbot.waitUntil(lambda: library.table.row_of(REMOTE_MODEL) is None, timeout=10_000)
        assert [r.name for r in remotes.table.items()] == ["gone"]
    finally:
        services.shutdown()
        front.stop()
