"""What the settings being chosen would take in memory, from the daemon's plan: the Qt-free state
(which ask is current, the plan in one sentence), the service that asks once the user pauses,
then the Settings page and a chat's settings showing it (what it would take, the GPU layers it
places), and a long chat offered a larger context only where its plan fits, over the gateway and
a stand-in daemon whose plan follows the options it is asked with (its real counterparts:
``test_gui_e2e_setting_plan``, ``test_gui_e2e_long_chat``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
from PySide6.QtCore import Qt

from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.services.setting_plan import SettingPlan
from localllm.app.gui.state.chat.records import ChatOptions
from localllm.app.gui.state.fit import GpuLayers, gpu_hint, needed_memory
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.records import GpuInfo, SystemInfo
from localllm.app.gui.state.setting_plan import PlanAsk, PlanPreview, memory_options, plan_summary
from localllm.app.gui.state.units import bytes_text
from localllm.app.gui.views.main_window import MainWindow
from localllm.app.gui.views.models_page import ModelsPage
from localllm.app.gui.workers import Workers
from localllm.daemon.api import GpuInfo as ApiGpu
from localllm.daemon.api import PlanDevice, PlanPartOut, PlanResponse, SystemResponse
from localllm.daemon.api.native_chat import TruncatedHistory
from localllm.daemon.client import ServerError
from tests.support.cli import MIB, PLAN, FakeClient, answer_chunks
from tests.support.gui_e2e import prefs_in

MODEL = "tiny:latest"
GB = 1_000_000_000
KV_PER_TOKEN = 96 * 1024  # the stand-in's cache: 24 KiB a token in each of 4 slots
GPU_REASON = "12/19 layers fit in 7.5 GiB free VRAM"


@dataclass
class PlanningDaemon(FakeClient):
    """Plans a cache that grows with the context asked for (8,192 tokens when none is), which
    fits up to ``fits_up_to`` tokens; with ``gpu``, an 8 GB card on which 12 of the model's 19
    layers fit (or the layers asked for go); or fails to plan at all."""

    fail: bool = False
    fits_up_to: int = 1 << 20
    gpu: bool = False

    def system(self) -> SystemResponse:
        found = super().system()
        cards = [ApiGpu(name="RTX", vram_total=8 * GB, vram_free=8 * GB)] if self.gpu else []
        return found.model_copy(update={"gpus": cards, "backend": "cuda" if self.gpu else "cpu"})

    def plan(self, name: str, options: Any = None) -> PlanResponse:
        self.calls.append(("plan", name, dict(options or {})))
        if self.fail:
            raise ServerError("the model's file could not be read", 500)
        options = options or {}
        context = options.get("num_ctx", 8192)
        load = [
            PlanPartOut(kind="weights", device="CPU", bytes=248 * MIB, text="weights"),
            PlanPartOut(kind="kv", device="CPU", bytes=context * KV_PER_TOKEN, text="K and V"),
            PlanPartOut(kind="compute", device="CPU", bytes=514 * MIB, text="graph"),
        ]
        later = PlanPartOut(kind="host cache", device="CPU", bytes=GB, text="", later=True)
        total = sum(p.bytes for p in load)
        settings = PLAN.settings.model_copy(
            update={"context_length": context, **self._placement(options)}
        )
        device = PlanDevice(device="CPU", bytes=total, later_bytes=GB, free=8 * GB)
        fits = context <= self.fits_up_to
        changes = {"parts": [*load, later], "devices": [device], "total": total, "fits": fits}
        changes |= {} if fits else {"suggestion": f"it fits at {self.fits_up_to:,} tokens a slot"}
        return PLAN.model_copy(update={"settings": settings, **changes})

    def _placement(self, options: dict) -> dict:
        if "num_gpu" in options:
            layers, reason = options["num_gpu"], f"num_gpu={options['num_gpu']} requested"
        else:
            layers, reason = (12, GPU_REASON) if self.gpu else (0, "no GPU found")
        return {"gpu_layers": layers, "total_layers": 19, "placement_reason": reason}

    def plans(self) -> list[dict]:
        return [call[2] for call in self.calls if call[0] == "plan"]


def planned(options: dict) -> str:
    """The sentence the stand-in's plan of ``options`` makes."""
    return plan_summary(Gateway(PlanningDaemon()).plan(MODEL, options))


@pytest.fixture
def workers(qtbot):
    pool = Workers()
    yield pool
    pool.shutdown()


# the state


def test_a_chats_memory_options_are_its_context_and_gpu_layers():
    assert memory_options(ChatOptions(), 4096) == {"num_ctx": 4096}  # what the app sends
    chosen = ChatOptions(temperature=1.0, num_ctx=8192, num_predict=9, num_gpu=10)
    assert memory_options(chosen, 4096) == {"num_ctx": 8192, "num_gpu": 10}
    assert memory_options(ChatOptions(), None) == {}  # the daemon decides


def test_the_plan_in_one_sentence():
    plan = Gateway(PlanningDaemon()).plan(MODEL, {"num_ctx": 4096})
    cache = bytes_text(4096 * KV_PER_TOKEN)
    assert plan_summary(plan) == (
        f"{bytes_text(plan.total)} at 4,096 tokens x 4 slots (weights 260.0 MB, cache {cache}, "
        "compute 539.0 MB). Fits in the memory free now."
    )  # the prompt cache the runner may fill later is not in it
    refused = replace(plan, fits=False, suggestion="it fits at 2,048 tokens a slot")
    assert plan_summary(refused).endswith(
        ". Does not fit in the memory free now: it fits at 2,048 tokens a slot."
    )


def test_only_the_current_asks_plan_is_shown():
    plan = Gateway(PlanningDaemon()).plan(MODEL, {"num_ctx": 4096})
    preview = PlanPreview()
    first, second = PlanAsk.of(MODEL, {"num_ctx": 2048}), PlanAsk.of(MODEL, {"num_ctx": 4096})
    assert preview.text() == ""  # no model: nothing
    assert preview.want(first) and not preview.want(PlanAsk.of(MODEL, {"num_ctx": 2048}))
    assert preview.text() == f"{MODEL} at this setting: planning…"
    assert preview.want(second)
    assert not preview.answered(first, plan)  # a late answer to the older ask: dropped
    assert preview.plan is None
    assert preview.answered(second, plan)
    assert preview.text("Memory") == f"Memory: {plan_summary(plan)}"
    assert not preview.failed_for(first)
    assert preview.failed_for(second) and preview.text() == ""  # no figure rather than a guess
    assert preview.clear() and not preview.clear()


def test_the_gpu_layers_are_the_plans():
    """Where the chat's plan puts the model's layers, and why, in the daemon's words; no figure
    until a plan has come (or after a failure); without a GPU, that said."""
    plan_of = Gateway(PlanningDaemon(gpu=True)).plan
    auto, asked = PlanAsk.of(MODEL, {"num_ctx": 4096}), PlanAsk.of(MODEL, {"num_gpu": 10})
    preview = PlanPreview()
    preview.want(auto)
    assert preview.gpu_layers() is None
    assert gpu_hint(None, True) == "Auto puts as many layers on the GPU as fit in its memory."
    preview.answered(auto, plan_of(MODEL, auto.options_dict()))
    layers = preview.gpu_layers()
    assert layers == GpuLayers(12, 19, GPU_REASON, asked=False)
    assert gpu_hint(layers, True) == (
        f"Auto puts 12 of its 19 layers on the GPU at these settings: {GPU_REASON}."
    )
    assert gpu_hint(layers, False) == "No GPU found: the model runs on the CPU."
    preview.want(asked)
    preview.answered(asked, plan_of(MODEL, asked.options_dict()))
    layers = preview.gpu_layers()
    assert layers == GpuLayers(10, 19, "num_gpu=10 requested", asked=True)
    assert gpu_hint(layers, True) == (
        "10 of its 19 layers go on the GPU, as set here; auto puts as many there as fit."
    )
    preview.failed_for(asked)
    assert preview.gpu_layers() is None


# the service


def test_asks_without_a_pause_are_sent_once_for_the_last(qtbot, workers):
    daemon = PlanningDaemon()
    plans = SettingPlan(Gateway(daemon), workers)
    for context in (1, 16, 163, 1638, 16384):  # typed digit by digit: no pause between
        plans.ask(MODEL, {"num_ctx": context})
    qtbot.waitUntil(lambda: plans.preview.plan is not None)
    assert daemon.plans() == [{"num_ctx": 16384}] and plans.sent == 1
    assert plans.preview.text() == f"{MODEL} at this setting: {planned({'num_ctx': 16384})}"
    plans.ask(MODEL, {"num_ctx": 16384})  # the same again: not asked again
    assert plans.sent == 1
    with qtbot.waitSignal(plans.changed):
        plans.ask(MODEL, {"num_ctx": 16384}, fresh=True)  # against the memory free now
    assert daemon.plans() == [{"num_ctx": 16384}] * 2


def test_a_failed_plan_shows_nothing(qtbot, workers):
    plans = SettingPlan(Gateway(PlanningDaemon(fail=True)), workers)
    plans.ask(MODEL, {"num_ctx": 4096})
    assert plans.preview.text().endswith("planning…")
    qtbot.waitUntil(lambda: plans.preview.failed)
    assert plans.preview.text() == ""


# the views


def test_the_model_details_show_no_figure_when_the_daemon_cannot_plan(qtbot, workers):
    library = ModelLibrary(Gateway(PlanningDaemon(fail=True)), workers)
    page = ModelsPage(library)
    qtbot.addWidget(page)
    page.show()
    shown = []  # what the details say as they appear (the page draws them first)
    library.details_ready.connect(lambda _d: shown.append(page.plan_view.words.text()))
    library.refresh()
    qtbot.waitUntil(lambda: library.table.rowCount() == 1)
    page.table.selectRow(0)
    qtbot.waitUntil(lambda: bool(shown))
    guess = f"about {bytes_text(needed_memory(PlanningDaemon().models[0].size))}"
    assert shown[0] == f"{guess} (the daemon is planning it)"  # the file size's, said so
    qtbot.waitUntil(lambda: page.plan_view.words.text().startswith("Not known"))
    assert page.plan_view.words.text() == (
        "Not known: the daemon could not plan it (the model's file could not be read)."
    )


def _window(qtbot, tmp_path, daemon: FakeClient):
    services = build_services(Gateway(daemon), tmp_path, autostart=False)
    window = MainWindow(services, prefs_in(tmp_path))
    qtbot.addWidget(window)
    window.show()
    services.library.refresh()
    qtbot.waitUntil(lambda: services.library.table.row_of(MODEL) is not None)
    return services, window


def test_the_settings_page_shows_the_plan_at_the_chosen_context(qtbot, tmp_path):
    daemon = PlanningDaemon()
    services, window = _window(qtbot, tmp_path, daemon)
    try:
        services.chat.default_model = MODEL
        page = window.settings_page
        window.show_page("Settings")
        at_4096 = f"{MODEL} at this setting: {planned({'num_ctx': 4096})}"
        qtbot.waitUntil(lambda: page.cost.text() == at_4096)
        assert daemon.plans()[-1] == {"num_ctx": 4096}  # what chats ask for by default
        row = page.context.findData(16384)
        page.context.setCurrentIndex(row)
        page.context.activated.emit(row)
        at_16384 = f"{MODEL} at this setting: {planned({'num_ctx': 16384})}"
        qtbot.waitUntil(lambda: page.cost.text() == at_16384)
        assert daemon.plans()[-1] == {"num_ctx": 16384}
        assert at_16384 != at_4096
    finally:
        services.shutdown()


def test_a_chats_settings_show_the_plan_of_the_context_typed(qtbot, tmp_path):
    daemon = PlanningDaemon()
    services, window = _window(qtbot, tmp_path, daemon)
    panel = window.chat_page.settings
    try:
        services.chat.new_chat(MODEL)
        qtbot.waitUntil(lambda: services.chat.session is not None)
        window.chat_page.settings_button.click()
        default = f"Memory: {planned({'num_ctx': 4096})}"
        qtbot.waitUntil(lambda: panel.memory.text() == default)
        assert panel.memory.isVisibleTo(panel)
        panel.set_system(SystemInfo(32 * GB, 16 * GB, (GpuInfo("RTX", 8 * GB, 8 * GB),)))
        asked = len(daemon.plans())
        panel.advanced.gpu_layers.setValue(10)
        panel.context.lineEdit().selectAll()
        qtbot.keyClicks(panel.context.lineEdit(), "16384")
        typed = f"Memory: {planned({'num_ctx': 16384, 'num_gpu': 10})}"
        qtbot.waitUntil(lambda: panel.memory.text() == typed)
        assert daemon.plans()[asked:] == [{"num_ctx": 16384, "num_gpu": 10}]  # once, the last
        qtbot.keyClick(panel.context.lineEdit(), Qt.Key.Key_Backspace)
        qtbot.waitUntil(lambda: "1,638 tokens" in panel.memory.text())
        daemon.fail = True
        qtbot.keyClick(panel.context.lineEdit(), Qt.Key.Key_Backspace)
        qtbot.waitUntil(lambda: not panel.memory.isVisibleTo(panel))  # no figure at all
        assert panel.memory.text() == "" and daemon.plans()[-1] == {"num_ctx": 163, "num_gpu": 10}
    finally:
        services.shutdown()


def test_a_chats_gpu_layers_say_what_the_plan_of_its_settings_places(qtbot, tmp_path):
    daemon = PlanningDaemon(gpu=True)
    services, window = _window(qtbot, tmp_path, daemon)
    advanced = window.chat_page.settings.advanced
    try:
        services.hub.load_system()
        qtbot.waitUntil(lambda: services.hub.system is not None)
        services.chat.new_chat(MODEL)
        qtbot.waitUntil(lambda: services.chat.session is not None)
        window.chat_page.settings_button.click()
        auto = f"Auto puts 12 of its 19 layers on the GPU at these settings: {GPU_REASON}."
        qtbot.waitUntil(lambda: advanced.gpu_hint.text() == auto)
        assert advanced.gpu_layers.isEnabled() and advanced.gpu_layers.maximum() == 19
        advanced.gpu_layers.setValue(10)
        asked = "10 of its 19 layers go on the GPU, as set here; auto puts as many there as fit."
        qtbot.waitUntil(lambda: advanced.gpu_hint.text() == asked)
        assert daemon.plans()[-1] == {"num_ctx": 4096, "num_gpu": 10}
        daemon.fail = True
        advanced.gpu_layers.setValue(11)
        qtbot.waitUntil(lambda: window.chat_plan.preview.failed)
        assert daemon.plans()[-1] == {"num_ctx": 4096, "num_gpu": 11}
        assert advanced.gpu_hint.text() == (  # no figure rather than a guess
            "Auto puts as many layers on the GPU as fit in its memory."
        )
    finally:
        services.shutdown()


# a long chat's larger context

# a model whose numbers a cache formula would take (32 layers, 8 key-value heads of 128 values):
# 512 tokens' cache is 64 MiB, which "fits" the 8 GB free; the plan decides all the same
LLAMA_INFO = {
    "llama.block_count": 32,
    "llama.attention.head_count": 32,
    "llama.attention.head_count_kv": 8,
}


def _long_chat_daemon(**fields) -> PlanningDaemon:
    """A stand-in whose every reply says the oldest turns were dropped (from the third on)."""
    *pieces, final = answer_chunks("Noted.")
    dropped = final.model_copy(
        update={"truncated": TruncatedHistory(dropped_messages=2, kept_from=2)}
    )
    daemon = PlanningDaemon(chat_chunks=[*pieces, dropped], **fields)
    daemon.show_info.model_info |= LLAMA_INFO
    return daemon


def _long_chat(qtbot, services) -> None:
    """A chat with the model at 256 tokens and 3 GPU layers, answered twice: the second reply
    came back without the first turns."""
    services.hub.load_system()
    qtbot.waitUntil(lambda: services.hub.system is not None)
    chat = services.chat
    chat.new_chat(MODEL)
    qtbot.waitUntil(lambda: chat.session is not None)
    c = chat.session.conversation
    chat.update_settings(replace(c, options=replace(c.options, num_ctx=256, num_gpu=3)))
    for text in ("one", "two"):
        with qtbot.waitSignal(chat.reply_finished):
            assert chat.send(text)
    assert chat.session.conversation.memory.starts_at


def test_a_long_chat_is_offered_a_larger_context_where_its_plan_fits(qtbot, tmp_path):
    daemon = _long_chat_daemon()
    services, window = _window(qtbot, tmp_path, daemon)
    notice = window.chat_page.memory_notice
    try:
        _long_chat(qtbot, services)
        qtbot.waitUntil(lambda: notice.larger.isVisibleTo(window))
        assert notice.larger.text() == "Use 512 tokens"
        assert {"num_ctx": 512, "num_gpu": 3} in daemon.plans()  # with the chat's GPU layers
        notice.larger.click()
        assert services.chat.session.conversation.options.num_ctx == 512
        qtbot.waitUntil(lambda: notice.larger.text() == "Use 1,024 tokens")  # planned again
        assert daemon.plans()[-1] == {"num_ctx": 1024, "num_gpu": 3}
    finally:
        services.shutdown()


@pytest.mark.parametrize("trouble", [{"fits_up_to": 300}, {"fail": True}])
def test_no_larger_context_is_offered_where_its_plan_does_not_fit_or_fails(
    qtbot, tmp_path, trouble
):
    daemon = _long_chat_daemon(**trouble)
    services, window = _window(qtbot, tmp_path, daemon)
    offer = window.chat_page.offer_plan.preview
    try:
        _long_chat(qtbot, services)
        qtbot.waitUntil(lambda: offer.plan is not None or offer.failed)
        assert offer.ask == PlanAsk.of(MODEL, {"num_ctx": 512, "num_gpu": 3})
        assert not window.chat_page.memory_notice.isVisibleTo(window)
    finally:
        services.shutdown()
