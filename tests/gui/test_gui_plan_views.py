"""The memory plan in the app's views, over the gateway and a stand-in client: the model
details' bar, Discover asking for the plans of the quants on screen only, the first-run cards
judged by the starters' plans, and a chat refused for memory answered again with Load anyway."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QColor

from localllm.app.gui.design.widgets import page_palette
from localllm.app.gui.services.chat import ChatController
from localllm.app.gui.services.hub import HubService
from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.state.chat.errors import LOAD_ANYWAY_HINT
from localllm.app.gui.state.fit import Fit
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.model_plan import plan_lines
from localllm.app.gui.state.starter_models import STARTERS
from localllm.app.gui.views.discover_page import DiscoverPage, visible_records
from localllm.app.gui.views.models_page import ModelsPage
from localllm.app.gui.views.plan_bar import PlanView
from localllm.app.gui.views.transcript import Transcript
from localllm.app.gui.views.welcome import WelcomePage
from localllm.app.gui.workers import Workers
from localllm.daemon.api import CatalogModel, ChatChunk, HubFile, PlanResponse
from localllm.daemon.client import ServerError
from tests.support.cli import PLAN, FakeClient, answer_chunks

REFUSAL = (
    "model 'tiny' needs 9.1 GiB of RAM (weights 4.1 GiB, KV cache 4.0 GiB) but only 6.0 GiB "
    "is free (keeping 20% headroom); it fits at 8,192 tokens a slot (num_ctx 8192)"
)


@dataclass
class Daemonish(FakeClient):
    """A repository of many quants, a catalog with the starters, and a daemon that refuses
    a load for memory unless asked to load anyway."""

    def hub_files(self, repo: str) -> list[HubFile]:
        return [
            HubFile(
                file=f"m-{i:03}.gguf",
                quant=f"Q{i}",
                size=(i + 1) * 1_000_000,
                shards=1,
                name_to_pull=f"hf.co/{repo}:Q{i}",
            )
            for i in range(120)
        ]

    def hub_catalog(self) -> list[CatalogModel]:
        return [
            CatalogModel(
                name=m.name,
                repo=f"org/{m.name}",
                quant="Q4_K_M",
                kind="chat",
                parameter_size=m.parameters,
                size=m.size,
                description=m.blurb,
            )
            for m in STARTERS
        ]

    def hub_plan(
        self,
        repo: str,
        file: str | None = None,
        quant: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> PlanResponse:
        self.calls.append(("hub_plan", repo, file, quant, dict(options or {})))
        too_large = repo == f"org/{STARTERS[0].name}"
        return PLAN.model_copy(update={"model": f"hf.co/{repo}:Q", "fits": not too_large})

    def chat(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        keep_alive: str | float | None = None,
        format: str | Mapping[str, Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stream: bool = True,
        think: bool | str | None = None,
        truncate: bool | None = None,
    ) -> Iterator[ChatChunk]:
        self.calls.append(("chat", model, dict(options or {})))
        if not (options or {}).get("load_anyway"):
            raise ServerError(REFUSAL, 507)
        yield from answer_chunks("Loaded", " anyway.")


@pytest.fixture
def client():
    return Daemonish()


@pytest.fixture
def workers(qtbot):
    pool = Workers()
    yield pool
    pool.shutdown()


def test_the_plan_view_draws_a_bar_per_device_coloured_by_kind(qtbot):
    view = PlanView()
    qtbot.addWidget(view)
    view.resize(480, 200)
    view.show()
    plan = Gateway(FakeClient()).plan("tiny")
    view.show_plan(plan)
    assert view.words.text() == "\n".join(plan_lines(plan))
    assert [row.device for row in view.bars.rows] == ["RAM"]
    image = view.bars.grab().toImage()
    weights = image.pixelColor(60, 7)  # the bar's start: the weights
    assert weights == QColor(page_palette().accent)
    legend = [view.legend.itemAt(i).widget() for i in range(view.legend.count() - 1)]
    assert [w.layout().itemAt(1).widget().text() for w in legend] == [
        "weights 260.0 MB",
        "cache 100.7 MB",
        "compute 539.0 MB",
        "prompt cache 1.1 GB",
    ]
    view.show_text("Planning…")
    assert view.bars.rows == () and view.words.text() == "Planning…"


def test_the_model_details_show_the_daemons_plan(qtbot, client, workers):
    library = ModelLibrary(Gateway(client), workers)
    page = ModelsPage(library)
    qtbot.addWidget(page)
    page.show()
    library.refresh()
    qtbot.waitUntil(lambda: library.table.rowCount() == 1)
    qtbot.waitUntil(lambda: library.table.plan("tiny:latest") is not None)  # the badge's
    page.table.selectRow(0)
    qtbot.waitUntil(lambda: page.plan_view is not None and page.plan_view.plan is not None)
    assert page.plan_view.plan.total == PLAN.total
    assert page.plan_view.words.text().endswith("\nFits in the memory free now.")
    assert ("plan", "tiny:latest", {"num_ctx": 4096}) in client.calls  # what chats ask for
    assert library.table.index(0, library.table.FITS).data() == Fit.RAM.label


def test_discover_plans_the_quants_on_screen_only(qtbot, client, workers):
    hub = HubService(Gateway(client), workers)
    page = DiscoverPage(hub)
    qtbot.addWidget(page)
    page.resize(900, 500)
    page.show()
    page.views.setCurrentIndex(1)  # the search results and a repository's files
    hub.open_repo("org/many")
    qtbot.waitUntil(lambda: hub.files.rowCount() == 120)
    qtbot.waitUntil(lambda: _planned(client) != [])
    on_screen = [f.file for f in visible_records(page.files)]
    qtbot.waitUntil(lambda: sorted(_planned(client)) == sorted(on_screen))
    assert 0 < len(on_screen) < 60  # not all 120
    memory = 3
    qtbot.waitUntil(lambda: hub.files.index(0, memory).data() == "899.7 MB")  # the plan's
    unplanned = hub.files.row_of("m-119.gguf")
    assert hub.files.index(unplanned, memory).data().startswith("about ")
    page.files.scrollToBottom()
    qtbot.waitUntil(lambda: "m-119.gguf" in _planned(client))
    assert len(_planned(client)) == len(set(_planned(client)))  # each once


def _planned(client) -> list[str]:
    return [call[2] for call in client.calls if call[0] == "hub_plan" and call[2]]


def test_the_first_run_cards_follow_the_starters_plans(qtbot, client, workers):
    hub = HubService(Gateway(client), workers)
    welcome = WelcomePage()
    qtbot.addWidget(welcome)
    welcome.plans_wanted.connect(hub.plan_catalog)
    hub.catalog_planned.connect(welcome.set_plan)
    welcome.show()  # asks for the plans; the catalog is not in yet
    hub.load_catalog()
    qtbot.waitUntil(lambda: len(welcome.plans) == len(STARTERS))
    asked = {call[1]: call[3] for call in client.calls if call[0] == "hub_plan"}
    assert asked == {f"org/{m.name}": "Q4_K_M" for m in STARTERS}
    first = STARTERS[0].name  # its plan does not fit
    assert welcome.buttons[first].text() == "Download anyway"
    assert all(welcome.buttons[m.name].text() == "Download" for m in STARTERS[1:])


def test_a_chat_refused_for_memory_offers_load_anyway(qtbot, client, workers, tmp_path):
    disk = Workers(max_threads=1)
    chat = ChatController(Gateway(client), workers, disk, tmp_path / "chats.db")
    chat.new_chat("tiny:latest")
    with qtbot.waitSignal(chat.reply_finished, timeout=5000) as finished:
        chat.send("Hello")
    refused = finished.args[0]
    assert refused.error == REFUSAL.replace("num_ctx", "Context length")  # the setting's name
    assert refused.hint == LOAD_ANYWAY_HINT
    transcript = Transcript()
    qtbot.addWidget(transcript)
    transcript.show_messages(tuple(chat.session.messages), "tiny", False)
    assert "Load anyway" in transcript.toPlainText()
    with qtbot.waitSignal(transcript.load_anyway_requested):
        transcript.anchorClicked.emit(QUrl("action:load_anyway"))
    with qtbot.waitSignal(chat.reply_finished, timeout=5000) as finished:
        chat.regenerate(load_anyway=True)
    assert finished.args[0].content == "Loaded anyway." and not finished.args[0].failed
    sent = [call[2] for call in client.calls if call[0] == "chat"]
    assert [options.get("load_anyway") for options in sent] == [None, True]
    transcript.show_messages(tuple(chat.session.messages), "tiny", False)
    assert "Load anyway" not in transcript.toPlainText()
    with qtbot.waitSignal(chat.reply_finished, timeout=5000):
        chat.regenerate()  # load_anyway was for that reply only
    assert [c[2].get("load_anyway") for c in client.calls if c[0] == "chat"][-1] is None
    chat.shutdown()
    disk.shutdown(wait_ms=2000, drop_queued=False)
