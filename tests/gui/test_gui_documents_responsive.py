"""A 1,000-page folder indexes without freezing the window: while the app indexes 40 PDFs of
25 pages each, the indexer is held at a gate half-way (on the 21st file), and meanwhile the
window serves its events and its bar shows the half done; then the rest goes through, every
step shown. A window that indexed on its own thread could do neither until it was all over."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QTimer

from localllm.app.documents import indexer
from tests.documents.files import write_pdf
from tests.gui.test_gui_e2e_chat import _ready
from tests.support.gui_e2e import GuiDaemon, open_app, tiny_models

pytestmark = pytest.mark.slow
FILES, PAGES = 40, 25
HELD = f"report-{FILES // 2:02}.pdf"  # the file the indexer waits at, half-way


def _write_library(folder) -> None:
    folder.mkdir()
    for number in range(FILES):
        pages = [
            "\n".join(
                f"Report {number} page {page} line {line}: measurements of unit {number * page}."
                for line in range(30)
            )
            for page in range(PAGES)
        ]
        write_pdf(folder / f"report-{number:02}.pdf", pages)


@pytest.fixture
def daemon(tmp_path, tiny_model_path):
    running = GuiDaemon(tmp_path / "daemon", tiny_models(tiny_model_path))
    yield running
    running.stop()


def test_indexing_a_thousand_pages_keeps_the_window_responsive(
    qtbot, daemon, tmp_path, monkeypatch
):
    _write_library(tmp_path / "library")
    held, release = threading.Event(), threading.Event()
    read_document = indexer.read_document

    def gated(path, root, limit):
        if path.name == HELD:
            held.set()
            release.wait(120)  # only bounds a failure: the test releases it
        return read_document(path, root, limit)

    monkeypatch.setattr(indexer, "read_document", gated)
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    bar = window.chat_page.documents
    shown: list[int] = []  # the bar's value at each step, in the order the window saw them
    services.documents.progress.connect(lambda _chat, _p: shown.append(bar.progress.value()))
    with qtbot.waitSignal(services.documents.indexed, timeout=280_000) as indexed:
        bar.attach([tmp_path / "library"])
        qtbot.waitUntil(held.is_set, timeout=120_000)
        served: list[bool] = []  # an event the window handles while the indexer waits
        QTimer.singleShot(0, lambda: served.append(True))
        qtbot.waitUntil(lambda: bool(served) and bar.progress.value() == FILES // 2)
        release.set()
    report = indexed.args[1]
    assert report.indexed == FILES and report.errors == ()
    assert report.passages >= FILES * PAGES  # every page is at least one passage
    assert shown == sorted(shown) and len(set(shown)) == FILES + 1  # 0..40, shown as it went
    services.shutdown()
