"""The daemon's plan of a model at the settings being chosen, asked for once the user pauses.

Each view that shows what a setting costs in memory (the Settings page's context, a chat's own
settings) has one of these: it is told every step of a choice, waits for a pause (a context
typed or a list scrolled asks once, for the last value), then asks ``/api/plan`` in a worker.
What it shows is ``preview`` (``state.setting_plan``): the current ask, its plan once it comes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.records import ModelPlan
from localllm.app.gui.state.setting_plan import PlanAsk, PlanPreview
from localllm.app.gui.workers import Workers

__all__ = ["PAUSE_MS", "SettingPlan"]

PAUSE_MS = 350  # a pause this long ends a choice (typing, scrolling a list)


class SettingPlan(QObject):
    changed = Signal()  # ``preview`` changed: asked, planned, failed or cleared

    def __init__(
        self, gateway: Gateway, workers: Workers, parent: QObject | None = None, pause_ms=PAUSE_MS
    ):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.preview = PlanPreview()
        self.sent = 0  # plans asked of the daemon (what the pause saves)
        self._pause = QTimer(self, singleShot=True, interval=pause_ms)
        self._pause.timeout.connect(self._send)

    def ask(self, model: str, options: Mapping[str, Any], *, fresh: bool = False) -> None:
        """Plan ``model`` with ``options`` once the asks pause; the last one wins. The same
        ask again is not sent, unless ``fresh``: against the memory free now (the plan on
        screen stays until the new one comes)."""
        if self.preview.want(PlanAsk.of(model, options)):
            self._pause.start()
            self.changed.emit()
        elif fresh and not self._pause.isActive():
            self._send()

    def clear(self) -> None:
        """Nothing to plan (no model, or a remote one)."""
        self._pause.stop()
        if self.preview.clear():
            self.changed.emit()

    def _send(self) -> None:
        ask = self.preview.ask
        if ask is None:
            return
        self.sent += 1
        job = self._workers.call(
            lambda: self._gateway.plan(ask.model, ask.options_dict()),
            lambda plan: self._answered(ask, plan),
            lambda _error: self._failed(ask),
        )
        self.destroyed.connect(job.cancel)  # a closed dialog hears nothing more

    def _answered(self, ask: PlanAsk, plan: ModelPlan) -> None:
        if self.preview.answered(ask, plan):  # not a late answer to an older ask
            self.changed.emit()

    def _failed(self, ask: PlanAsk) -> None:
        if self.preview.failed_for(ask):
            self.changed.emit()
