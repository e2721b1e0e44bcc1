"""The composer's Tools button: the MCP servers a model that calls tools is offered, turned on
and off where the message is written (the Tools page's choice, saved), what it means for the
chat's model, and the way to the Tools page."""

from __future__ import annotations

from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.services.chat_tools import ChatTools
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.main_window import MainWindow
from localllm.app.gui.views.tools_menu import ToolsButton
from localllm.app.gui.workers import Workers
from localllm.app.tools.config_store import McpSettingsStore
from localllm.app.tools.servers import ServerConfig
from localllm.model_registry.credentials import NO_KEYRING
from tests.support.cli import FakeClient
from tests.support.gui_e2e import prefs_in

SERVERS = (
    ServerConfig("weather", command="weather-mcp"),
    ServerConfig("notes", url="http://127.0.0.1:9/mcp", enabled=False),
)


def _items(button: ToolsButton) -> dict[str, object]:
    button.menu().aboutToShow.emit()  # as opening it fills it
    return {a.text(): a for a in button.menu().actions() if a.text()}


def test_servers_are_turned_on_and_off_from_the_message_box(qtbot, tmp_path):
    net = Workers(max_threads=2)
    tools = ChatTools(Gateway(), net, tmp_path, keyring_backend=NO_KEYRING)
    tools.save(tools.settings.with_servers(SERVERS))
    button = ToolsButton(tools)
    qtbot.addWidget(button)
    assert button.text() == "Tools · 1"  # one server on
    items = _items(button)
    weather, notes = items["weather"], items["notes"]
    assert weather.isChecked() and not notes.isChecked()
    notes.setChecked(True)  # as a click does
    assert [s.enabled for s in tools.settings.servers] == [True, True]
    assert button.text() == "Tools · 2"
    items["Make models call a tool first"].setChecked(True)
    assert tools.settings.require_call
    qtbot.waitUntil(lambda: net.busy == 0, timeout=10_000)
    saved = McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING).load()
    assert [s.enabled for s in saved.servers] == [True, True] and saved.require_call

    button.set_model("gemma3-270m:latest", False)
    items = _items(button)
    said = items["gemma3-270m:latest does not call tools"]
    assert not said.isEnabled() and "does not call tools" in button.toolTip()
    with qtbot.waitSignal(button.manage_requested):
        items["Add or edit servers…"].trigger()
    tools.shutdown()
    net.shutdown(wait_ms=2000)


def test_the_message_box_holds_documents_and_tools_and_leads_to_the_tools_page(qtbot, tmp_path):
    services = build_services(Gateway(FakeClient()), tmp_path, autostart=False)
    window = MainWindow(services, prefs_in(tmp_path))
    qtbot.addWidget(window)
    window.show()
    page = window.chat_page
    box = page.composer.box
    assert box.isAncestorOf(page.tools_button) and box.isAncestorOf(page.documents.button)
    assert page.tools_button.isVisible() and page.tools_button.text() == "Tools"
    page.tools_button.menu().aboutToShow.emit()
    items = {a.text(): a for a in page.tools_button.menu().actions()}
    assert not items["No MCP servers yet"].isEnabled()
    items["Add or edit servers…"].trigger()
    assert window.pages.currentWidget() is window.tools_page
    services.shutdown()


def test_changes_made_while_one_is_being_written_are_saved_in_order(qtbot, tmp_path):
    """Two clicks in a row: the second's settings must be what the file keeps, however the
    workers that write them are scheduled (an older write once landed after a newer one)."""
    from tests.support.gate import Gate

    net = Workers(max_threads=2)
    tools = ChatTools(Gateway(), net, tmp_path, keyring_backend=NO_KEYRING)
    gate = Gate(guard=30.0)
    store = tools._store
    store.save = gate.wrap(store.save)  # the first write waits until the test lets it go
    tools.save(tools.settings.with_servers(SERVERS))
    assert gate.entered.wait(10)
    tools.save(tools.settings.with_servers(SERVERS[:1]))
    newest = tools.settings.with_servers(SERVERS[1:])
    tools.save(newest)
    qtbot.waitUntil(lambda: net.busy == 1, timeout=10_000)  # nothing else is left to write
    gate.open()
    qtbot.waitUntil(lambda: net.busy == 0, timeout=10_000)
    saved = McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING).load()
    assert [s.name for s in saved.servers] == ["notes"]
    tools.shutdown()
    net.shutdown(wait_ms=2000)
