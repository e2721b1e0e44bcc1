"""What a setting takes in memory, in the real app against a real daemon and a generated model: a
chat's settings and the Settings page show the daemon's own plan for the context chosen (the
sentence its ``/api/plan`` answer makes, asked apart), it changes with the context, and the plan
requests on the wire carry the chosen options, once per pause in typing."""

from __future__ import annotations

import pytest

from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.setting_plan import plan_summary
from localllm.daemon.client import Client
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models
from tests.support.wire_log import WireLog

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """``tiny``, trained for 32,768 tokens: every context the app offers is its own."""
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("gui-setting-plan")
    model = write_tiny_model(root / "long.gguf", context_length=32768)
    running = GuiDaemon(root, tiny_models(model))
    yield running
    running.stop()


def _gateway(daemon, wire: WireLog) -> Gateway:
    def make(key: str | None, timeout: float) -> Client:
        return Client(daemon.url, api_key=key, timeout=timeout, transport=wire)

    return Gateway(None, daemon.control(), make_client=make)


def _said(daemon, options: dict) -> str:
    """The daemon's plan of the model with ``options``, in the app's sentence."""
    return plan_summary(daemon.gateway().plan(MODEL, options))


def _open_chat(qtbot, services, window) -> None:
    qtbot.waitUntil(lambda: services.library.table.row_of(MODEL) is not None, timeout=10_000)
    qtbot.waitUntil(lambda: services.chat.session is not None, timeout=10_000)
    services.chat.new_chat(MODEL)
    qtbot.waitUntil(lambda: services.chat.session.conversation.model == MODEL)


def test_a_chats_settings_show_the_daemons_plan_of_the_context_typed(qtbot, daemon, tmp_path):
    wire = WireLog()
    services, window = open_app(qtbot, _gateway(daemon, wire), tmp_path)
    panel = window.chat_page.settings
    try:
        _open_chat(qtbot, services, window)
        window.chat_page.settings_button.click()
        default = f"Memory: {_said(daemon, {'num_ctx': 4096})}"  # what chats ask for
        qtbot.waitUntil(lambda: panel.memory.text() == default, timeout=20_000)
        panel.context.lineEdit().selectAll()
        qtbot.keyClicks(panel.context.lineEdit(), "1024")
        typed = f"Memory: {_said(daemon, {'num_ctx': 1024})}"
        assert typed != default
        qtbot.waitUntil(lambda: panel.memory.text() == typed, timeout=20_000)
        asked = wire.plan_options(MODEL)
        assert asked[-1] == {"num_ctx": 1024}
        assert not [o for o in asked if o.get("num_ctx") in (1, 10, 102)]  # typed: asked once
    finally:
        services.shutdown()


def test_the_settings_page_shows_the_daemons_plan_at_the_chosen_context(qtbot, daemon, tmp_path):
    wire = WireLog()
    services, window = open_app(qtbot, _gateway(daemon, wire), tmp_path)
    page = window.settings_page
    try:
        _open_chat(qtbot, services, window)
        window.show_page("Settings")
        default = f"{MODEL} at this setting: {_said(daemon, {'num_ctx': 4096})}"
        qtbot.waitUntil(lambda: page.cost.text() == default, timeout=20_000)
        row = page.context.findData(16384)
        page.context.setCurrentIndex(row)
        page.context.activated.emit(row)
        chosen = f"{MODEL} at this setting: {_said(daemon, {'num_ctx': 16384})}"
        assert chosen != default
        qtbot.waitUntil(lambda: page.cost.text() == chosen, timeout=20_000)
        assert wire.plan_options(MODEL)[-1] == {"num_ctx": 16384}
    finally:
        services.shutdown()
