"""The installed models (and the remote engines' models, which have no details to fetch
here): list, details, memory plans, delete, copy, in workers.

Owns the Models page's table model. Details (metadata, template, capabilities) cost a request
each, so they are fetched once per digest and kept; the context column and the badges of what
each model can do are filled from them. Each model's memory plan (what loading it with the
context its chats ask for would take, against the memory free now) is asked for after every
refresh, as free memory changes with what is loaded; the fit badges follow it.
What a chat gets by default (``defaults``) also needs the context length the daemon starts
models with, which comes from the same settings the daemon reads, and the context the app
prefers for its chats (the Settings page).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.item_models.daemon_tables import InstalledModelsModel
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.model_defaults import ModelDefaults, modelfile_parameters
from localllm.app.gui.state.preferences import DEFAULT_CONTEXT, chat_context
from localllm.app.gui.state.records import InstalledModel, ModelDetails, ModelPlan
from localllm.app.gui.workers import Workers
from localllm.daemon.settings import Settings

__all__ = ["ModelLibrary"]


class ModelLibrary(QObject):
    changed = Signal(object)  # tuple[InstalledModel, ...], after every refresh
    details_ready = Signal(object)  # ModelDetails
    error = Signal(str)

    def __init__(
        self,
        gateway: Gateway,
        workers: Workers,
        parent: QObject | None = None,
        *,
        daemon_context: int | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        settings = gateway.control.settings if gateway.control is not None else Settings()
        self.daemon_context = daemon_context or settings.num_ctx
        self.preferred_context = DEFAULT_CONTEXT  # what chats ask for (0: the daemon decides)
        self.table = InstalledModelsModel(self)
        self.loaded = False  # becomes True after the first successful list
        self._details: dict[str, tuple[str, ModelDetails]] = {}  # name -> (digest, details)

    def models(self) -> tuple[InstalledModel, ...]:
        return self.table.items()

    def refresh(self) -> None:
        self._workers.call(self._gateway.models, self._listed, self._report)

    def details(self, name: str, then: Callable[[ModelDetails], None] | None = None) -> None:
        """Details from the cache when the digest is unchanged, else from the daemon."""
        cached = self.cached_details(name)
        if self.is_remote(name):  # its engine knows its details; nothing here to ask
            self._deliver(ModelDetails(name=name, capabilities=frozenset({"completion"})), then)
        elif cached is not None:
            self._deliver(cached, then)
        else:
            self._fetch(name, lambda d: self._deliver(d, then), self._report)

    def is_remote(self, name: str) -> bool:
        row = self.table.row_of(name)
        return row is not None and bool(self.table.item(row).remote)

    def defaults(self, details: ModelDetails) -> ModelDefaults:
        """What a chat with this model gets for each setting it leaves to the model."""
        return ModelDefaults.of(details, self.daemon_context, self.preferred_context)

    def chat_context(self, name: str) -> int | None:
        """The num_ctx a chat with ``name`` that sets none sends: None to leave it to the
        model's Modelfile or the daemon, or while the model's trained length is unknown."""
        details = self.cached_details(name)
        if details is None or self.is_remote(name):
            return None
        return self._context_of(details)

    def with_chat_context(self, name: str, then: Callable[[int | None], None]) -> None:
        """``chat_context``, fetching the model's details first when they are not known yet
        (so a chat's first reply asks for the same context as the next ones)."""
        if self.is_remote(name) or self.table.row_of(name) is None:
            return then(None)
        cached = self.cached_details(name)
        if cached is not None:
            return then(self._context_of(cached))
        self._fetch(name, lambda d: then(self._context_of(d)), lambda _e: then(None))

    def _context_of(self, details: ModelDetails) -> int | None:
        own = modelfile_parameters(details.parameters).get("num_ctx")
        modelfile = own if isinstance(own, int) and not isinstance(own, bool) else None
        return chat_context(self.preferred_context, details.context_length, modelfile)

    def cached_details(self, name: str) -> ModelDetails | None:
        entry = self._details.get(name)
        return entry[1] if entry and entry[0] == self._digest(name) else None

    def plan(
        self,
        name: str,
        then: Callable[[ModelPlan], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """The daemon's memory plan of ``name`` with the context its chats ask for; the fit
        badge of its row follows it. Nothing for a remote model (its engine plans its own)."""
        if self.is_remote(name) or self.table.row_of(name) is None:
            return

        def got(plan: ModelPlan) -> None:
            self.table.set_plan(name, plan)
            if then is not None:
                then(plan)

        def ask(context: int | None) -> None:
            options = {"num_ctx": context} if context else {}
            self._workers.call(
                lambda: self._gateway.plan(name, options), got, on_error or (lambda _e: None)
            )

        self.with_chat_context(name, ask)

    def delete(self, name: str) -> None:
        self._workers.call(
            lambda: self._gateway.delete(name), lambda _: self.refresh(), self._report
        )

    def copy(self, source: str, destination: str) -> None:
        self._workers.call(
            lambda: self._gateway.copy(source, destination), lambda _: self.refresh(), self._report
        )

    def _listed(self, models: tuple[InstalledModel, ...]) -> None:
        self.loaded = True
        filled = []
        for m in models:
            cached = self._details.get(m.name)
            if cached is not None and cached[0] == m.digest:
                filled.append(_with_details(m, cached[1]))
            else:
                filled.append(m)
        self.table.replace(filled)
        self.changed.emit(self.table.items())
        for m in filled:  # best effort: the badges guess until these come
            if m.remote:
                continue
            if m.capabilities is None and m.name not in self._details:
                self._fetch(m.name, lambda d: self.plan(d.name), lambda _e: None)
            else:
                self.plan(m.name)

    def _fetch(self, name: str, then, on_error) -> None:
        digest = self._digest(name)

        def got(details: ModelDetails) -> None:
            self._details[name] = (digest, details)
            self._fill_row(details)
            then(details)

        self._workers.call(lambda: self._gateway.details(name), got, on_error)

    def _fill_row(self, details: ModelDetails) -> None:
        row = self.table.row_of(details.name)
        if row is not None:
            self.table.upsert(_with_details(self.table.item(row), details))

    def _digest(self, name: str) -> str:
        row = self.table.row_of(name)
        return self.table.item(row).digest if row is not None else ""

    def _deliver(self, details: ModelDetails, then) -> None:
        self.details_ready.emit(details)
        if then is not None:
            then(details)

    def _report(self, error: Exception) -> None:
        self.error.emit(str(error))


def _with_details(model: InstalledModel, details: ModelDetails) -> InstalledModel:
    """The list's row with what only the details say: the trained context, the capabilities."""
    context = details.context_length or model.context_length
    return replace(model, context_length=context, capabilities=details.capabilities)
