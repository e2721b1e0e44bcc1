"""The tables the pages show, as column lists over ``RecordTableModel``.

Each class only says which columns a record has and how they read; keeping rows in step with
the daemon is the base class's job.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import Any

from localllm.app.gui.item_models.table import Column, RecordTableModel
from localllm.app.gui.state.abilities import Ability, abilities_of
from localllm.app.gui.state.downloads import Download
from localllm.app.gui.state.fit import Fit, fit_for, needed_memory, plan_fit
from localllm.app.gui.state.model_plan import memory_text, plan_tip
from localllm.app.gui.state.records import (
    CatalogModel,
    HubFile,
    InstalledModel,
    ModelPlan,
    RunningModel,
    SystemInfo,
)
from localllm.app.gui.state.units import ago, bytes_text, duration_text, rate_text

__all__ = [
    "CatalogTableModel",
    "DownloadsModel",
    "HubFilesModel",
    "HubReposModel",
    "InstalledModelsModel",
    "RunningModelsModel",
]


def _stamp(moment: datetime | None) -> float:
    if moment is None:
        return 0.0
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _context(n: int | None) -> str:
    return f"{n:,}" if n else ""


def _count(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _local(text):
    """A column that has nothing to say about a remote model (its engine keeps the file)."""
    return lambda m: "" if m.remote else text(m)


def _model_name(m) -> str:
    return f"{m.name}  · remote {m.remote}" if m.remote else m.name


def _served_by(m) -> str:
    if not m.remote:
        return ""
    return f"Served by the remote engine '{m.remote}' (Server page, Remotes)"


_COMPLETION = Ability(
    "completion", "neutral", "Continues text: a base model, with no chat template of its own"
)
_MADE_FROM_A_TEMPLATE = {"chat", "tools", "thinking"}  # the daemon reads these off a template


def _abilities(m) -> tuple[Ability, ...]:
    """What ``m`` can do beyond chat, as the details say it: a base model (it completes text
    and has no chat template) says "completion" where every other says nothing."""
    held = set(m.capabilities or ())
    base = "completion" in held and not held & _MADE_FROM_A_TEMPLATE
    return ((_COMPLETION,) if base else ()) + abilities_of(held)


_CAN = Column(  # what a model can do beyond chat, as badges: vision, thinking, tools
    "Can",
    lambda m: ", ".join(a.label for a in _abilities(m)),
    badges=lambda m: tuple((a.label, a.tone) for a in _abilities(m)),
    tooltip=lambda m: "\n".join(a.why for a in _abilities(m)),
)


def _fits(fit: Callable[[Any], Fit], tip: Callable[[Any], str] | None = None) -> Column:
    """Whether a model runs well on this computer (its plan says; until it came, its file
    size), as a badge."""
    return Column("Fits", lambda m: fit(m).label, tooltip=tip, tone=lambda m: fit(m).tone)


class _PlannedTable(RecordTableModel):
    """A table whose rows get the daemon's memory plans as they come (``set_plan``): a row's
    fit badge and memory figure are its plan's once it has one."""

    def __init__(self, key: Callable[[Any], Hashable], parent=None):
        super().__init__(key, parent)
        self._plans: dict[Hashable, ModelPlan] = {}

    def set_plan(self, key: Hashable, plan: ModelPlan) -> None:
        self._plans[key] = plan
        row = self.row_of(key)
        if row is not None:
            self._changed(row)

    def plan(self, key: Hashable) -> ModelPlan | None:
        return self._plans.get(key)

    def clear_plans(self) -> None:
        self._plans.clear()


_INSTALLED_FACTS = (
    Column("Params", _local(lambda m: m.parameter_size), about="Parameters"),
    Column("Quant", _local(lambda m: m.quantization), about="Quantization"),
    Column(  # the longest context it takes; the details say what chats run at
        "Max context",
        lambda m: _context(m.context_length),
        lambda m: m.context_length or 0,
        numeric=True,
        about="The longest context it takes (what it was trained for), in tokens",
    ),
    Column("Modified", _local(lambda m: ago(m.modified_at)), lambda m: _stamp(m.modified_at)),
)


class InstalledModelsModel(_PlannedTable):
    """Installed models and remote ones, the latter marked with their remote's name (the chat's
    model picker shows the same first column), with badges for whether each fits this computer
    (its memory plan, once the daemon sent it) and what it can do (known once its details
    came)."""

    FITS = 2  # the column of the fit badge

    def __init__(self, parent=None):
        super().__init__(lambda m: m.name, parent)
        self._system: SystemInfo | None = None
        self.columns = (
            Column("Name", _model_name, lambda m: m.name, tooltip=_served_by),
            Column("Size", _local(lambda m: bytes_text(m.size)), lambda m: m.size, numeric=True),
            _fits(self.fit, self._fit_tip),
            _CAN,
            *_INSTALLED_FACTS,
        )

    def set_system(self, system: SystemInfo | None) -> None:
        self._system = system
        if self.rowCount():
            last = self.rowCount() - 1
            self.dataChanged.emit(self.index(0, self.FITS), self.index(last, self.FITS))

    def fit(self, m: InstalledModel) -> Fit:
        if m.remote:
            return Fit.UNKNOWN
        plan = self._plans.get(m.name)
        return plan_fit(plan) if plan is not None else fit_for(m.size, self._system)

    def _fit_tip(self, m: InstalledModel) -> str:
        return "" if m.remote else plan_tip(self._plans.get(m.name), m.size)

    def names(self) -> list[str]:
        return [m.name for m in self.items()]


def _expires(m: RunningModel) -> str:
    if m.expires_at is None:
        return ""
    left = _stamp(m.expires_at) - datetime.now(UTC).timestamp()
    if left > 10 * 365 * 86400:
        return "never"
    return f"in {duration_text(max(left, 0))}"


def _memory_why(m: RunningModel) -> str:
    if m.remote:
        return ""
    context = f"{m.context_length:,} tokens of context" if m.context_length else "its context"
    return (
        f"{bytes_text(m.size)}: the weights, and the K/V cache for {context} in each slot. "
        "A shorter context (Settings, or the chat's own) takes less."
    )


class RunningModelsModel(RecordTableModel):
    columns = (
        Column("Name", lambda m: m.name),
        Column(
            "Memory",
            _local(lambda m: bytes_text(m.size)),
            lambda m: m.size,
            numeric=True,
            tooltip=_memory_why,
        ),
        Column("Processor", lambda m: f"remote {m.remote}" if m.remote else m.processor),
        Column(
            "Context",
            lambda m: _context(m.context_length),
            lambda m: m.context_length or 0,
            numeric=True,
        ),
        Column("Unloads", _expires, lambda m: _stamp(m.expires_at)),
    )

    def __init__(self, parent=None):
        super().__init__(lambda m: m.name, parent)


class HubReposModel(RecordTableModel):
    columns = (
        Column("Repository", lambda r: r.repo),
        Column("Downloads", lambda r: _count(r.downloads), lambda r: r.downloads, numeric=True),
        Column("Likes", lambda r: _count(r.likes), lambda r: r.likes, numeric=True),
        Column("Updated", lambda r: ago(r.updated), lambda r: _stamp(r.updated)),
    )

    def __init__(self, parent=None):
        super().__init__(lambda r: r.repo, parent)


class HubFilesModel(_PlannedTable):
    """A repository's GGUF files, each with its fit badge for this machine and what it would
    take in memory: its plan from its header once the daemon read it (``set_plan``), until
    then "about" a figure from its file size."""

    FITS = 2

    def __init__(self, parent=None):
        super().__init__(lambda f: f.file, parent)
        self._system: SystemInfo | None = None
        self.columns = (
            Column(
                "Quant",
                lambda f: (f.quant or "?") + ("  ★ recommended" if f.recommended else ""),
                lambda f: f.quant,
                tooltip=lambda f: _RECOMMENDED if f.recommended else "",
            ),
            Column("Size", lambda f: bytes_text(f.size), lambda f: f.size, numeric=True),
            _fits(self.fit, self._fit_tip),
            Column(
                "Memory",
                lambda f: memory_text(self._plans.get(f.file), f.size),
                lambda f: self._memory(f),
                numeric=True,
                tooltip=self._fit_tip,
                about="What loading it would take, at the context chats ask for",
            ),
            Column("File", lambda f: f.file),
        )

    def set_system(self, system: SystemInfo | None) -> None:
        self._system = system
        if self.rowCount():
            self.dataChanged.emit(self.index(0, 2), self.index(self.rowCount() - 1, 2))

    def fit(self, f: HubFile) -> Fit:
        plan = self._plans.get(f.file)
        return plan_fit(plan) if plan is not None else fit_for(f.size, self._system)

    def _memory(self, f: HubFile) -> int:
        plan = self._plans.get(f.file)
        return plan.total if plan is not None else needed_memory(f.size)

    def _fit_tip(self, f: HubFile) -> str:
        if self._system is None and f.file not in self._plans:
            return "Waiting for this machine's memory from the daemon"
        tip = plan_tip(self._plans.get(f.file), f.size)
        return tip if f.file in self._plans else f"{tip}, on {self._machine()}"

    def _machine(self) -> str:
        s = self._system
        ram = f"{bytes_text(s.ram_total)} RAM" if s else ""
        return f"{bytes_text(s.vram_total)} VRAM, {ram}" if s and s.gpus else ram


_RECOMMENDED = "The best quality that fits in this machine's free memory"


class CatalogTableModel(_PlannedTable):
    """The curated models (known without the internet), each with its fit badge (its plan's,
    once the daemon read its header on the hub) and what it can do (the catalog says, so it
    shows before a download)."""

    def __init__(self, parent=None):
        super().__init__(lambda m: m.name, parent)
        self._system: SystemInfo | None = None
        self.offline = False
        self.columns = (
            Column("Model", lambda m: m.name, tooltip=lambda m: m.repo),
            Column("Parameters", lambda m: m.parameter_size),
            Column("Size", lambda m: bytes_text(m.size), lambda m: m.size, numeric=True),
            _fits(self.fit, lambda m: plan_tip(self._plans.get(m.name), m.size)),
            _CAN,
            Column("About", lambda m: m.description, tooltip=lambda m: m.description),
        )

    def set_system(self, system: SystemInfo | None) -> None:
        self._system = system
        self._changed(3)

    def set_offline(self, offline: bool) -> None:
        self.offline = offline  # said once, by the page's banner, not on every row

    def fit(self, m: CatalogModel) -> Fit:
        plan = self._plans.get(m.name)
        return plan_fit(plan) if plan is not None else fit_for(m.size, self._system)

    def _changed(self, column: int) -> None:
        if self.rowCount():
            last = self.rowCount() - 1
            self.dataChanged.emit(self.index(0, column), self.index(last, column))


def _progress(d: Download) -> str:
    if d.kind == "import" and d.state == "done":
        return f"imported from a file ({bytes_text(d.total)}), nothing downloaded"
    if d.state == "failed":
        return d.error.split(". ")[0] or "failed"
    if not d.total:
        return "complete" if d.state == "done" else d.status
    return f"{bytes_text(d.completed)} of {bytes_text(d.total)} ({d.fraction:.0%})"


def _state(d: Download) -> str:
    if d.kind == "import":
        return {"done": "imported", "running": "importing"}.get(d.state, d.state)
    return d.state


def _why(d: Download) -> str:
    """The daemon's last status, and the whole error when it failed."""
    return f"{d.status}\n{d.error}" if d.error else d.status


def _tone(d: Download) -> str:
    return {"done": "success", "failed": "danger", "paused": "warning"}.get(d.state, "info")


class DownloadsModel(RecordTableModel):
    columns = (
        Column("Model", lambda d: d.name),
        Column("Progress", _progress, lambda d: d.fraction),
        Column(
            "Speed",
            lambda d: rate_text(d.speed) if d.speed else "",
            lambda d: d.speed,
            numeric=True,
        ),
        Column("Time left", lambda d: duration_text(d.eta), lambda d: d.eta or 0, numeric=True),
        Column("State", _state, tooltip=_why, tone=_tone),
    )

    def __init__(self, parent=None):
        super().__init__(lambda d: d.name, parent)
