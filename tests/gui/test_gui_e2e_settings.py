"""Chat settings in the real app against a real daemon: the Advanced values and presets go out
with the chat request (seen on the wire) and take effect (a seed repeats a reply), the GPU
layers say what the daemon's plan places (or that there is no GPU), presets outlive the app,
and a model without a chat template is named as such in the chat.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from localllm.app.gui.state.fit import GpuLayers, gpu_hint
from localllm.app.gui.state.gateway import Gateway
from localllm.daemon.client import Client
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models
from tests.support.wire_log import WireLog

pytestmark = pytest.mark.slow
BASE = "base:latest"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("gui-settings")
    base = write_tiny_model(root / "base.gguf", chat_template=None, seed=5)
    running = GuiDaemon(root, {**tiny_models(tiny_model_path), "base": base})
    yield running
    running.stop()


def _gateway(daemon, wire: WireLog) -> Gateway:
    def make(key: str | None, timeout: float) -> Client:
        return Client(daemon.url, api_key=key, timeout=timeout, transport=wire)

    return Gateway(None, daemon.control(), make_client=make)


def _pick(qtbot, window, name: str) -> None:
    qtbot.waitUntil(lambda: window.services.library.table.row_of(name) is not None, timeout=10_000)
    qtbot.waitUntil(lambda: window.services.chat.session is not None, timeout=10_000)
    row = window.services.library.table.row_of(name)
    window.chat_page.model_picker.setCurrentIndex(row)
    window.chat_page.model_picker.activated.emit(row)
    qtbot.waitUntil(lambda: window.services.chat.session.conversation.model == name)


def _send(qtbot, window, text: str) -> str:
    composer = window.chat_page.composer
    composer.editor.setPlainText(text)
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=30_000):
        qtbot.keyClick(composer.editor, Qt.Key.Key_Return)
    reply = window.services.chat.session.messages[-1]
    assert not reply.failed, reply.error
    return reply.content


def test_advanced_values_and_presets_reach_the_daemon(qtbot, daemon, tmp_path):
    wire = WireLog()
    services, window = open_app(qtbot, _gateway(daemon, wire), tmp_path)
    page, panel = window.chat_page, window.chat_page.settings
    try:
        _pick(qtbot, window, MODEL)
        page.settings_button.click()
        panel.advanced.toggle.click()
        qtbot.waitUntil(lambda: services.hub.system is not None, timeout=10_000)
        if not services.hub.system.gpus:  # this machine: offloading is off, and says why
            assert not panel.advanced.gpu_layers.isEnabled()
            assert panel.advanced.gpu_hint.text() == "No GPU found: the model runs on the CPU."
        else:  # what the daemon's plan of the chat's settings places, once it has come
            plan = daemon.gateway().plan(MODEL, {"num_ctx": 2048})
            placed = gpu_hint(GpuLayers.of(plan, asked=False), has_gpu=True)
            qtbot.waitUntil(lambda: panel.advanced.gpu_hint.text() == placed, timeout=20_000)
            assert panel.advanced.gpu_layers.maximum() == plan.total_layers
        panel.temperature.setValue(1.5)
        panel.advanced.top_k.setValue(30)
        panel.advanced.top_p.setValue(0.95)
        panel.advanced.min_p.setValue(0.02)
        panel.advanced.repeat_penalty.setValue(1.05)
        panel.advanced.seed.setValue(4242)
        first = _send(qtbot, window, "Tell me something")
        sent = wire.chats[-1]["options"]
        assert {k: sent.get(k) for k in ("top_k", "top_p", "min_p", "repeat_penalty", "seed")} == {
            "top_k": 30,
            "top_p": 0.95,
            "min_p": 0.02,
            "repeat_penalty": 1.05,
            "seed": 4242,
        }
        assert sent["temperature"] == 1.5 and "num_gpu" not in sent
        assert sent["num_ctx"] == 2048  # the app's 4,096, within what the model was trained for
        assert panel.save_as_preset("Repeatable")
        qtbot.waitUntil(lambda: panel.preset.currentText() == "Repeatable")

        services.chat.new_chat(MODEL)  # a fresh chat with the model's defaults...
        qtbot.waitUntil(lambda: not services.chat.session.messages)
        assert panel.advanced.seed.value() == panel.advanced.seed.minimum()
        panel.preset.activated.emit(panel.preset.findText("Repeatable"))  # ...then the preset
        assert _send(qtbot, window, "Tell me something") == first  # the same seed, same reply
        assert wire.chats[-1]["options"] == sent
    finally:
        services.shutdown()

    again, _window = open_app(qtbot, _gateway(daemon, WireLog()), tmp_path)
    try:
        qtbot.waitUntil(lambda: again.presets.presets.names() == ["Repeatable"], timeout=10_000)
        assert again.presets.presets.get("Repeatable").options.seed == 4242
        again.presets.delete("Repeatable")
        qtbot.waitUntil(lambda: again.disk.busy == 0, timeout=10_000)
    finally:
        again.shutdown()
    last, _window = open_app(qtbot, _gateway(daemon, WireLog()), tmp_path)
    try:
        qtbot.waitUntil(lambda: last.disk.busy == 0, timeout=10_000)
        assert last.presets.presets.names() == []  # the deletion was kept too
    finally:
        last.shutdown()


def test_a_model_without_a_chat_template_is_named_in_the_chat(qtbot, daemon, tmp_path):
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    notice = window.chat_page.settings.model_notice
    try:
        _pick(qtbot, window, BASE)
        qtbot.waitUntil(lambda: notice.isVisibleTo(window), timeout=10_000)
        assert "base:latest has no chat template" in notice.text()
        assert "<|im_end|>" not in _send(qtbot, window, "Once upon a time")
        _pick(qtbot, window, MODEL)  # a chat model: no notice
        qtbot.waitUntil(lambda: not notice.isVisibleTo(window), timeout=10_000)
    finally:
        services.shutdown()
