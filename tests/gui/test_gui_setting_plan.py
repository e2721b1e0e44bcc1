"""What the settings being chosen would take in memory, from the daemon's plan: the Qt-free state
(which ask is current, the plan in one sentence), the service that asks once the user pauses,
then the Settings page and a chat's settings showing it, over the gateway and a stand-in daemon
whose plan follows the options it is asked with (its real counterpart:
``test_gui_e2e_setting_plan``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.gui.services.bundle import build_services
from app.gui.services.library import ModelLibrary
from app.gui.services.setting_plan import SettingPlan
from app.gui.state.chat.records import ChatOptions
from app.gui.state.fit import needed_memory
from app.gui.state.gateway import Gateway
from app.gui.state.records import GpuInfo, SystemInfo
from app.gui.state.setting_plan import PlanAsk, PlanPreview, memory_options, plan_summary
from app.gui.state.units import bytes_text
from app.gui.views.main_window import MainWindow
from app.gui.views.models_page import ModelsPage
from app.gui.workers import Workers
from daemon.api import PlanDevice, PlanPartOut, PlanResponse
from daemon.client import ServerError
from tests.support.cli import MIB, PLAN, FakeClient
from tests.support.gui_e2e import prefs_in

MODEL = "tiny:latest"
GB = 1_000_000_000
KV_PER_TOKEN = 96 * 1024  # the stand-in's cache: 24 KiB a token in each of 4 slots


@dataclass
class PlanningDaemon(FakeClient):
    """Plans a cache that grows with the context asked for (8,192 tokens when none is), or
    fails to plan at all."""

    fail: bool = False

    def plan(self, name: str, options: Any = None) -> PlanResponse:
        self.calls.append(("plan", name, dict(options or {})))
        if self.fail:
            raise ServerError("the model's file could not be read", 500)
        context = (options or {}).get("num_ctx", 8192)
        load = [
            PlanPartOut(kind="weights", device="CPU", bytes=248 * MIB, text="weights"),
            PlanPartOut(kind="kv", device="CPU", bytes=context * KV_PER_TOKEN, text="K and V"),
            PlanPartOut(kind="compute", device="CPU", bytes=514 * MIB, text="graph"),
        ]
        later = PlanPartOut(kind="host cache", device="CPU", bytes=GB, text="", later=True)
        total = sum(p.bytes for p in load)
        settings = PLAN.settings.model_copy(update={"context_length": context})
        device = PlanDevice(device="CPU", bytes=total, later_bytes=GB, free=8 * GB)
        changes = {"parts": [*load, later], "devices": [device], "total": total}
        return PLAN.model_copy(update={"settings": settings, **changes})

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
