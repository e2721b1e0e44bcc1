"""The chat settings panel on its own, fed plain records: presets, the Advanced section, the GPU
layers the daemon's plan places and the notice for a model without a chat template (and, for
what an edit leaves alone, the chat controller it reports to). The same panel in the window over
a real daemon is in ``test_gui_e2e_settings``."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import QApplication

from localllm.app.gui.services.chat import ChatController
from localllm.app.gui.state.chat.records import ChatOptions, Conversation
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.model_defaults import ModelDefaults
from localllm.app.gui.state.presets import Preset, Presets
from localllm.app.gui.state.records import GpuInfo, ModelDetails, ModelPlan, SystemInfo
from localllm.app.gui.state.setting_plan import PlanAsk, PlanPreview
from localllm.app.gui.views.chat_settings import NO_PRESET, ChatSettingsPanel
from localllm.app.gui.workers import Workers
from tests.support.cli import FakeClient

GB = 1_000_000_000
CHAT = Conversation("c1", "Trip plans", "tiny:latest", "Be brief.")
PRECISE = Preset("Precise", "Be exact.", ChatOptions(temperature=0.1, top_k=20, seed=7))


def _panel(qtbot) -> ChatSettingsPanel:
    panel = ChatSettingsPanel()
    qtbot.addWidget(panel)
    panel.show_conversation(CHAT)
    return panel


def test_advanced_values_go_with_the_chat(qtbot):
    panel = _panel(qtbot)
    assert panel.options() == ChatOptions()  # every box at "model default": nothing sent
    panel.advanced.toggle.click()
    assert panel.advanced.body.isVisibleTo(panel)
    panel.advanced.top_k.setValue(12)
    panel.advanced.top_p.setValue(0.9)
    panel.advanced.min_p.setValue(0.05)
    panel.advanced.repeat_penalty.setValue(1.15)
    panel.advanced.seed.setValue(1234)
    with qtbot.waitSignal(panel.changed) as changed:
        pass
    chat_id, _system_prompt, options = changed.args
    assert chat_id == CHAT.id
    assert options.to_options() == {
        "top_k": 12,
        "top_p": 0.9,
        "min_p": 0.05,
        "repeat_penalty": 1.15,
        "seed": 1234,
    }
    panel.show_conversation(replace(CHAT, options=options))
    assert panel.advanced.top_k.value() == 12 and panel.advanced.seed.value() == 1234


def test_presets_are_picked_saved_and_deleted(qtbot):
    panel = _panel(qtbot)
    panel.set_presets(Presets([PRECISE]))
    assert panel.preset.currentText() == NO_PRESET and not panel.delete_preset.isEnabled()
    with qtbot.waitSignal(panel.changed) as changed:
        panel.preset.activated.emit(panel.preset.findText("Precise"))
    chat_id, system_prompt, options = changed.args
    assert (system_prompt, options) == ("Be exact.", PRECISE.options)
    assert chat_id == CHAT.id and panel.advanced.top_k.value() == 20
    assert panel.preset.currentText() == "Precise" and panel.delete_preset.isEnabled()
    panel.temperature.setValue(0.7)  # edited: no longer the preset
    qtbot.waitUntil(lambda: panel.preset.currentText() == NO_PRESET)
    with qtbot.waitSignal(panel.preset_saved) as saved:
        assert panel.save_as_preset("  Warm  ")
    assert saved.args[0] == Preset("Warm", "Be exact.", replace(PRECISE.options, temperature=0.7))
    assert not panel.save_as_preset(" ") and "needs a name" in panel.problem.text()
    panel.set_presets(Presets([PRECISE, saved.args[0]]))
    assert panel.preset.currentText() == "Warm"
    with qtbot.waitSignal(panel.preset_deleted) as deleted:
        panel.delete_preset.click()
    assert deleted.args == ["Warm"]


def test_an_edit_keeps_what_changed_elsewhere(qtbot, tmp_path):
    """The model picked and the title given since the chat was shown stay when settings are
    edited after: the panel reports its values alone, and the chat controller writes them onto
    the chat as it is now (here the panel never heard of the change)."""
    panel = _panel(qtbot)
    disk = Workers(max_threads=1)
    controller = ChatController(Gateway(FakeClient()), Workers(), disk, tmp_path / "chats.db")
    controller.conversations.reset([replace(CHAT, model="other:latest", title="Renamed")])
    panel.changed.connect(controller.apply_settings)
    with qtbot.waitSignal(panel.changed):
        panel.temperature.setValue(0.3)
    chat = controller.conversations.conversation(CHAT.id)
    assert chat.model == "other:latest" and chat.title == "Renamed"
    assert chat.options.temperature == 0.3
    disk.shutdown(wait_ms=5000, drop_queued=False)  # the chat's save, before tmp_path goes


def test_gpu_layers_say_what_the_plan_places_or_that_there_is_no_gpu(qtbot):
    panel = _panel(qtbot)
    gpu = panel.advanced.gpu_layers
    ask = PlanAsk.of("tiny:latest", {"num_ctx": 4096})
    preview = PlanPreview()
    preview.want(ask)
    reason = "12/32 layers fit in 1.9 GiB free VRAM"
    plan = ModelPlan("tiny:latest", (), (), GB, True, gpu_layers=12, total_layers=32)
    preview.answered(ask, replace(plan, placement_reason=reason))
    panel.show_plan(preview)
    panel.set_system(SystemInfo(32 * GB, 16 * GB))  # this machine: no GPU
    assert not gpu.isEnabled() and "No GPU" in panel.advanced.gpu_hint.text()
    panel.set_system(SystemInfo(32 * GB, 16 * GB, (GpuInfo("RTX", 8 * GB, 2 * GB),)))
    assert gpu.isEnabled() and panel.advanced.gpu_hint.text() == (
        f"Auto puts 12 of its 32 layers on the GPU at these settings: {reason}."
    )
    gpu.setValue(10)
    assert panel.options().num_gpu == 10 and gpu.maximum() == 32
    preview.want(PlanAsk.of("tiny:latest", {"num_ctx": 4096, "num_gpu": 10}))  # planning
    panel.show_plan(preview)
    assert panel.advanced.gpu_hint.text() == (
        "Auto puts as many layers on the GPU as fit in its memory."  # no figure yet
    )


def test_a_model_without_a_chat_template_is_named_in_the_chat(qtbot):
    panel = _panel(qtbot)
    panel.show()
    base = ModelDetails("tiny:latest", capabilities=frozenset({"completion"}))
    panel.show_model(base)
    assert panel.model_notice.isVisibleTo(panel)
    assert "tiny:latest has no chat template" in panel.model_notice.text()
    assert "completion" in panel.model_notice.text()
    panel.show_model(ModelDetails("other:latest"))  # about another model: changes nothing
    assert panel.model_notice.isVisibleTo(panel)
    chat = ModelDetails("tiny:latest", capabilities=frozenset({"completion", "chat"}))
    panel.show_model(chat)
    assert not panel.model_notice.isVisibleTo(panel)


def test_think_is_offered_for_a_model_that_thinks_and_kept_with_the_chat(qtbot, tmp_path):
    panel = _panel(qtbot)
    panel.show()
    disk = Workers(max_threads=1)
    controller = ChatController(Gateway(FakeClient()), Workers(), disk, tmp_path / "chats.db")
    controller.conversations.reset([CHAT])
    panel.think_changed.connect(controller.set_think)
    assert not panel.think.isVisibleTo(panel)  # not before the model is known to think
    thinker = frozenset({"completion", "chat", "thinking"})
    panel.show_model(ModelDetails("tiny:latest", capabilities=thinker))
    assert panel.think.isVisibleTo(panel) and panel.think.currentText() == "model default"
    assert [panel.think.itemText(i) for i in range(panel.think.count())] == [
        "model default", "on", "off", "on, low effort", "on, medium effort", "on, high effort",
    ]  # fmt: skip
    with qtbot.waitSignal(panel.think_changed) as changed:
        panel.think.setCurrentIndex(panel.think.findData("off"))
        panel.think.activated.emit(panel.think.currentIndex())
    assert changed.args == [CHAT.id, "off"]
    assert controller.conversations.conversation(CHAT.id).think == "off"
    panel.show_conversation(controller.conversations.conversation(CHAT.id))  # opened again
    assert panel.think.currentData() == "off"
    # the chat moves to a model that does not think: the setting goes, or the daemon would
    # refuse the next message over a setting no longer on screen
    with qtbot.waitSignal(panel.think_changed) as dropped:
        panel.show_model(ModelDetails("tiny:latest", capabilities=frozenset({"chat"})))
    assert dropped.args == [CHAT.id, ""] and not panel.think.isVisibleTo(panel)
    assert controller.conversations.conversation(CHAT.id).think == ""
    disk.shutdown(wait_ms=5000, drop_queued=False)


def test_model_default_texts_are_never_cut_off(qtbot):
    """Qt's spin box takes a new special-value text without telling the layout its size
    changed, so the text the model's defaults bring ("model default (2,048)", known once the
    panel is up) showed cut off as "nodel default (2,048)"."""
    panel = _panel(qtbot)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_defaults(ModelDefaults(0.8, 2048, 2048, None))  # the model's details came
    QApplication.sendPostedEvents()  # the layout requests it made, handled now
    panel.resize(panel.minimumSizeHint())
    boxes = (panel.temperature, panel.context, panel.max_tokens)
    qtbot.waitUntil(lambda: all(box.width() >= box.sizeHint().width() for box in boxes))
