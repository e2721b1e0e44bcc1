"""The Tools page: MCP servers added through the dialog, kept (0600) in the app's folder,
checked against a real stdio server (its tools listed as plain text), turned off and removed;
a bad entry is refused in the dialog with what to fix."""

from __future__ import annotations

import json
import shlex
import stat
import sys

import pytest

from localllm.app.gui.services.chat_tools import ChatTools
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.mcp_json import McpJsonError
from localllm.app.gui.views.mcp_server_dialog import McpServerDialog
from localllm.app.gui.views.tools_page import ToolsPage
from localllm.app.gui.workers import Workers
from localllm.app.tools.config_store import FILE_NAME
from localllm.model_registry.credentials import NO_KEYRING
from tests.support.mcp_servers import write_server

pytestmark = pytest.mark.slow


@pytest.fixture
def page(qtbot, tmp_path):
    net = Workers(max_threads=4)
    tools = ChatTools(Gateway(), net, tmp_path / "app", keyring_backend=NO_KEYRING)
    shown = ToolsPage(tools)
    qtbot.addWidget(shown)
    yield shown
    qtbot.waitUntil(lambda: net.busy == 0, timeout=30_000)
    tools.shutdown()
    net.shutdown(wait_ms=2000)


def _saved(tmp_path) -> dict:
    return json.loads((tmp_path / "app" / FILE_NAME).read_text())


def test_add_check_turn_off_and_remove_a_server(qtbot, page, tmp_path):
    script = write_server(tmp_path / "server")
    dialog = McpServerDialog()
    dialog.name.setText("notes")
    dialog.command.setText(sys.executable)
    dialog.args.setText(shlex.join([str(script)]))
    dialog.env.setPlainText("NOTES_TOKEN=s3cret")
    dialog._accept()
    assert dialog.result() == McpServerDialog.DialogCode.Accepted
    page.add(dialog.server)

    qtbot.waitUntil(lambda: (tmp_path / "app" / FILE_NAME).exists(), timeout=5000)
    qtbot.waitUntil(lambda: _saved(tmp_path)["servers"][0]["name"] == "notes", timeout=5000)
    assert "s3cret" not in (tmp_path / "app" / FILE_NAME).read_text()
    assert stat.S_IMODE((tmp_path / "app" / FILE_NAME).stat().st_mode) == 0o600
    assert page.table.rowCount() == 1 and page.table.item(0, 0).text() == "notes"

    page.table.selectRow(0)
    page._check()
    qtbot.waitUntil(lambda: "Write a note down." in page.tool_list.toPlainText(), timeout=60_000)
    assert page.table.item(0, 2).text() == "Running · 5 tools"

    page.table.item(0, 0).setCheckState(page.table.item(0, 0).checkState().Unchecked)
    qtbot.waitUntil(lambda: _saved(tmp_path)["servers"][0]["enabled"] is False, timeout=5000)
    page.remove("notes")
    qtbot.waitUntil(lambda: _saved(tmp_path)["servers"] == [], timeout=5000)
    assert page.table.rowCount() == 0


def test_a_bad_entry_is_refused_in_the_dialog(qtbot):
    dialog = McpServerDialog()
    qtbot.addWidget(dialog)
    dialog.name.setText("web")
    dialog.as_url.setChecked(True)
    dialog.url.setText("ftp://example")
    dialog._accept()
    assert dialog.server is None
    assert "must start with http" in dialog.problem.text()
    dialog.as_command.setChecked(True)
    dialog.command.setText("run")
    dialog.env.setPlainText("just-a-word")
    dialog._accept()
    assert "NAME=value" in dialog.problem.text()


def test_a_server_that_cannot_start_shows_its_error_in_its_row(qtbot, page, tmp_path):
    from localllm.app.tools.servers import ServerConfig

    page.add(ServerConfig("ghost", command=str(tmp_path / "no-such-program")))
    qtbot.waitUntil(lambda: page.table.rowCount() == 1)
    page.table.selectRow(0)
    with qtbot.waitSignal(page._tools.error, timeout=60_000) as reported:
        page._check()
    assert "ghost could not start" in reported.args[0]
    qtbot.waitUntil(lambda: page.table.item(0, 2).text().startswith("Error: ghost could not"))
    assert page.tool_list.toPlainText() == ""


def test_with_no_server_the_page_says_how_and_offers_nothing_to_act_on(qtbot, page):
    page.show()
    assert page.empty.isVisibleTo(page) and not page.table.isVisibleTo(page)
    assert "mcp.json" in page.empty.hint.text()
    for name in ("Edit…", "Remove", "Check now"):
        assert not page.buttons[name].isEnabled(), name
    assert page.buttons["Add…"].isEnabled() and page.buttons["Paste mcp.json…"].isEnabled()


def test_a_pasted_mcp_json_adds_its_servers(qtbot, page, tmp_path):
    pasted = json.dumps(
        {
            "mcpServers": {
                "notes": {"command": sys.executable, "args": ["-m", "notes"], "env": {"T": "1"}},
                "@acme/search": {"url": "https://search.example/mcp"},
            }
        }
    )
    assert page.paste(pasted) == ["notes", "acme-search"]
    page.show()
    assert page.table.rowCount() == 2 and page.table.isVisibleTo(page)
    stored = tmp_path / "app" / FILE_NAME
    qtbot.waitUntil(lambda: stored.exists() and len(_saved(tmp_path)["servers"]) == 2)
    saved = {s["name"]: s for s in _saved(tmp_path)["servers"]}
    assert saved["notes"]["args"] == ["-m", "notes"] and saved["acme-search"]["url"]
    assert page.paste(pasted) == []  # the same again adds nothing
    page.table.selectRow(0)
    assert page.buttons["Remove"].isEnabled()
    with pytest.raises(McpJsonError, match="not JSON"):
        page.paste("{mcpServers:")
    with pytest.raises(McpJsonError, match="No servers found"):
        page.paste('{"other": 1}')
