"""The memory plan in the real app against a real daemon (its app served in this process, so its
memory probe can say how much is free) and a generated model: the model details show the
daemon's plan as bars with its figures, the fit badge follows it, and with too little memory
free a chat's load is refused (507, no runner started) and answered after Load anyway."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QUrl

from localllm.app.gui.services.chat import ChatController
from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.state.chat.errors import LOAD_ANYWAY_HINT
from localllm.app.gui.state.fit import Fit
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.models_page import ModelsPage
from localllm.app.gui.views.transcript import Transcript
from localllm.app.gui.workers import Workers
from localllm.daemon.client import Client
from localllm.daemon.scheduler import MemoryInfo
from localllm.daemon.server import create_app
from tests.support.in_process import app_settings, serve_in_thread
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

GIB = 1 << 30
MODEL = "tiny:latest"


class Memory:
    """The daemon's memory probe: plenty free, until a test makes it small."""

    def __init__(self) -> None:
        self.available = 8 * GIB

    def __call__(self) -> MemoryInfo:
        return MemoryInfo(16 * GIB, self.available)


@pytest.fixture
def memory():
    return Memory()


@pytest.fixture
def daemon(tmp_path, tiny_model_path, memory):
    from localllm.model_registry.importer import ModelExtras

    models = {"tiny": (tiny_model_path, ModelExtras(parameters={"num_predict": 4}))}

    def make_app(port: int):
        settings = app_settings(tmp_path, models, port=port, num_ctx=0, keep_alive_seconds=0)
        return create_app(settings, memory_probe=memory, gpu_probe=lambda: [])

    with serve_in_thread(make_app) as url:
        yield url


@pytest.fixture
def gateway(daemon):
    with Client(daemon, timeout=120) as client:
        yield Gateway(client)


@pytest.fixture
def workers(qtbot):
    pool, disk = Workers(), Workers(max_threads=1)
    yield pool, disk
    pool.shutdown(wait_ms=2000)
    disk.shutdown(wait_ms=2000, drop_queued=False)


def test_the_model_details_show_the_daemons_plan(qtbot, gateway, workers):
    library = ModelLibrary(gateway, workers[0])
    page = ModelsPage(library)
    qtbot.addWidget(page)
    page.resize(900, 700)
    page.show()
    library.refresh()
    qtbot.waitUntil(lambda: library.table.plan(MODEL) is not None, timeout=20_000)
    page.table.selectRow(0)
    qtbot.waitUntil(lambda: page.plan_view is not None and page.plan_view.plan is not None)
    plan = page.plan_view.plan
    assert plan.context_length == 2048  # what chats ask for (4,096), within its training
    [ram] = page.plan_view.bars.rows
    assert ram.device == "RAM" and ram.free == int(8 * GIB * 0.8)
    assert [s.group for s in ram.segments] == ["weights", "cache", "compute", "prompt cache"]
    words = page.plan_view.words.text()
    assert words.startswith("2,048 tokens x ") and words.endswith("\nFits in the memory free now.")
    assert library.table.index(0, library.table.FITS).data() == Fit.RAM.label


def test_a_load_refused_for_memory_is_answered_after_load_anyway(
    qtbot, gateway, workers, memory, tmp_path
):
    memory.available = 16 << 20  # 16 MiB: no model's plan fits
    chat = ChatController(gateway, *workers, tmp_path / "chats.db")
    chat.new_chat(MODEL)
    with qtbot.waitSignal(chat.reply_finished, timeout=60_000) as finished:
        chat.send("Hello")
    refused = finished.args[0]
    assert refused.failed and refused.hint == LOAD_ANYWAY_HINT
    assert f"model '{MODEL.split(':')[0]}' needs " in refused.error
    assert "of RAM" in refused.error and "load_anyway" in refused.error
    assert gateway.running() == ()  # refused before any runner started
    transcript = Transcript()
    qtbot.addWidget(transcript)
    transcript.load_anyway_requested.connect(lambda: chat.regenerate(load_anyway=True))
    transcript.show_messages(tuple(chat.session.messages), "tiny", False)
    with qtbot.waitSignal(chat.reply_finished, timeout=120_000) as finished:
        transcript.anchorClicked.emit(QUrl("action:load_anyway"))
    answer = finished.args[0]
    assert not answer.failed and answer.content and answer.stats.tokens == 4
    assert wait_for(lambda: gateway.running() == (), 30)  # keep_alive 0: unloaded again
    chat.shutdown()
