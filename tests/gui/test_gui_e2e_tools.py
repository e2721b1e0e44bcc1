"""Tools through MCP in the real app, against the real daemon and a real MCP server: a tiny
stdio server written here with the official SDK, whose tool the model calls (the app asks for
a call first, and the daemon's grammar makes the generated model write one). The app asks for
approval; an approved call really runs, its result shows and goes back to the model, which
goes on; a denied call never runs; a server that crashes is an error on the call, in place.
"""

from __future__ import annotations

import json
import sys

import pytest
from PySide6.QtCore import Qt, QUrl

from localllm.app.tools.config_store import McpSettings, McpSettingsStore
from localllm.app.tools.servers import ServerConfig
from localllm.model_registry.credentials import NO_KEYRING
from localllm.model_registry.tiny_gguf import CHATML_TEMPLATE
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models, wait_idle

pytestmark = pytest.mark.slow

# A ChatML template that renders the tools: the daemon then says the model can call tools.
TOOLS_TEMPLATE = "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}" + CHATML_TEMPLATE

SERVER = '''
import json, os, sys
from pathlib import Path
from typing import Literal
from mcp.server.mcpserver import MCPServer

server = MCPServer("pantry")
LOG = Path(__file__).with_name("ran.jsonl")


@server.tool()
def shop(item: Literal["milk", "eggs"]) -> str:
    """Put an item on the shopping list."""
    with LOG.open("a") as f:
        f.write(json.dumps({"item": item}) + "\\n")
    if os.environ.get("PANTRY_CRASH"):
        os._exit(7)
    return f"added {item} to the list"


server.run()
'''


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("gui-tools")
    model = write_tiny_model(root / "caller.gguf", seed=1, chat_template=TOOLS_TEMPLATE)
    running = GuiDaemon(root, tiny_models(model, num_predict=120))
    yield running
    running.stop()


def _server(folder, **env) -> ServerConfig:
    folder.mkdir(exist_ok=True)
    script = folder / "pantry.py"
    script.write_text(SERVER)
    return ServerConfig("pantry", command=sys.executable, args=(str(script),), env=env)


def _ran(folder) -> list[dict]:
    log = folder / "ran.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _open(qtbot, daemon, folder, server, monkeypatch):
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    store = McpSettingsStore(folder, keyring_backend=NO_KEYRING)
    store.save(McpSettings((server,), require_call=True))
    services, window = open_app(qtbot, daemon.gateway(), folder)
    qtbot.waitUntil(lambda: services.tools.settings.servers == (server,), timeout=10_000)
    qtbot.waitUntil(lambda: services.library.loaded, timeout=10_000)
    qtbot.waitUntil(lambda: services.chat.session is not None, timeout=10_000)
    services.chat.new_chat(MODEL)
    qtbot.waitUntil(lambda: services.chat.session.conversation.model == MODEL)
    return services, window


def _ask(qtbot, window, text: str) -> None:
    composer = window.chat_page.composer
    composer.editor.setFocus()
    qtbot.keyClicks(composer.editor, text)
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=120_000):
        qtbot.keyClick(composer.editor, Qt.Key.Key_Return)


def _click(window, call_id: str, choice: str) -> None:
    window.chat_page.transcript.anchorClicked.emit(QUrl(f"action:tool:{call_id}:{choice}"))


def _transcript(window) -> str:
    return " ".join(window.chat_page.transcript.toPlainText().split())


def test_an_approved_call_runs_its_result_shows_and_the_model_goes_on(
    qtbot, daemon, tmp_path, monkeypatch
):
    folder = tmp_path / "server"
    services, window = _open(qtbot, daemon, tmp_path, _server(folder), monkeypatch)
    _ask(qtbot, window, "Put milk or eggs on my list")
    chat = services.chat
    (call,) = chat.session.pending_calls
    assert call.name == "pantry__shop" and call.arguments["item"] in ("milk", "eggs")
    qtbot.waitUntil(
        lambda: "Approve" in _transcript(window) and "pantry__shop" in _transcript(window)
    )
    assert _ran(folder) == []  # nothing runs before the user says so

    with qtbot.waitSignal(chat.reply_finished, timeout=120_000):
        _click(window, call.id, "approve")
    assert _ran(folder) == [{"item": call.arguments["item"]}]
    called, answer = chat.session.messages[-2:]
    assert called.tool_calls[0].status == "done"
    assert called.tool_calls[0].result == f"added {call.arguments['item']} to the list"
    assert answer.role == "assistant" and answer.content and not answer.tool_calls
    qtbot.waitUntil(lambda: f"added {call.arguments['item']} to the list" in _transcript(window))
    wait_idle(qtbot, services)
    window.close()
    services.shutdown()

    again, reopened = open_app(qtbot, daemon.gateway(), tmp_path)  # kept with the chat
    qtbot.waitUntil(lambda: again.chat.session is not None, timeout=10_000)
    again.chat.open(chat.session.conversation.id)
    qtbot.waitUntil(
        lambda: (
            len(again.chat.session.messages) == 3
            and bool(again.chat.session.messages[1].tool_calls)
        )
    )
    assert again.chat.session.messages[1].tool_calls[0].status == "done"
    reopened.close()
    again.shutdown()


def test_a_denied_call_never_runs_and_the_model_is_told(qtbot, daemon, tmp_path, monkeypatch):
    folder = tmp_path / "server"
    services, window = _open(qtbot, daemon, tmp_path, _server(folder), monkeypatch)
    _ask(qtbot, window, "Put milk on my list")
    chat = services.chat
    (call,) = chat.session.pending_calls
    with qtbot.waitSignal(chat.reply_finished, timeout=120_000):
        _click(window, call.id, "deny")
    assert _ran(folder) == []
    assert chat.session.messages[-2].tool_calls[0].status == "denied"
    assert "Not allowed" in _transcript(window)
    window.close()
    services.shutdown()


def test_a_server_that_crashes_is_an_error_on_the_call(qtbot, daemon, tmp_path, monkeypatch):
    folder = tmp_path / "server"
    server = _server(folder, PANTRY_CRASH="1")
    services, window = _open(qtbot, daemon, tmp_path, server, monkeypatch)
    _ask(qtbot, window, "Put eggs on my list")
    chat = services.chat
    (call,) = chat.session.pending_calls
    with qtbot.waitSignal(chat.reply_finished, timeout=120_000):
        _click(window, call.id, "approve")
    failed = chat.session.messages[-2].tool_calls[0]
    assert failed.status == "failed" and "pantry" in failed.result
    qtbot.waitUntil(lambda: "Failed" in _transcript(window))
    assert chat.session.messages[-1].role == "assistant"  # the chat goes on
    window.close()
    services.shutdown()


def test_always_allow_runs_that_tool_without_asking_from_then_on(
    qtbot, daemon, tmp_path, monkeypatch
):
    folder = tmp_path / "server"
    services, window = _open(qtbot, daemon, tmp_path, _server(folder), monkeypatch)
    _ask(qtbot, window, "Put milk on my list")
    chat = services.chat
    (call,) = chat.session.pending_calls
    with qtbot.waitSignal(chat.reply_finished, timeout=120_000):
        _click(window, call.id, "always")
    assert len(_ran(folder)) == 1
    [shop] = [tool for tool in services.tools.tools_of("pantry") if tool.name == "shop"]
    allowed = lambda settings: settings.is_allowed(settings.server("pantry"), shop)  # noqa: E731
    qtbot.waitUntil(lambda: allowed(services.tools.settings))
    saved = McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING)
    qtbot.waitUntil(lambda: allowed(saved.load()), timeout=5000)

    answers = len(chat.session.messages) + 3  # the question, the call, the answer after it
    _ask(qtbot, window, "And eggs")  # the call's reply: it runs at once, then the model goes on
    qtbot.waitUntil(lambda: len(chat.session.messages) == answers, timeout=120_000)
    qtbot.waitUntil(lambda: not chat.session.streaming, timeout=120_000)
    assert len(_ran(folder)) == 2
    assert chat.session.messages[-2].tool_calls[0].status == "done"
    window.close()
    services.shutdown()
