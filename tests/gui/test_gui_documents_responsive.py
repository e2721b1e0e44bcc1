"""A 1,000-page folder indexes without freezing the window: while the app indexes 40 PDFs of
25 pages each, a timer on the UI thread keeps ticking and the progress bar keeps moving: the
timer ticks between every two steps of the bar (a window that froze while indexing would show
the steps back to back, with no tick between them, once it woke)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QTimer

from tests.documents.files import write_pdf
from tests.gui.test_gui_e2e_chat import _ready
from tests.support.gui_e2e import GuiDaemon, open_app, tiny_models

pytestmark = pytest.mark.slow
FILES, PAGES = 40, 25
TICK = "tick"


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


def test_indexing_a_thousand_pages_keeps_the_window_responsive(qtbot, daemon, tmp_path):
    _write_library(tmp_path / "library")
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    bar = window.chat_page.documents
    seen: list[int | str] = []  # the bar's value at each progress and the ticks, in UI order
    timer = QTimer(interval=20)
    timer.timeout.connect(lambda: seen.append(TICK))
    services.documents.progress.connect(lambda _chat, _p: seen.append(bar.progress.value()))
    timer.start()
    with qtbot.waitSignal(services.documents.indexed, timeout=280_000) as indexed:
        bar.attach([tmp_path / "library"])
    timer.stop()
    report = indexed.args[1]
    assert report.indexed == FILES and report.errors == ()
    assert report.passages >= FILES * PAGES  # every page is at least one passage
    shown = [value for value in seen if value != TICK]
    assert shown == sorted(shown) and len(set(shown)) == FILES + 1  # 0..40, shown as it went
    assert _steps_without_a_tick(seen) == []
    services.shutdown()


def _steps_without_a_tick(seen: list[int | str]) -> list[int]:
    """The bar's values reached with no tick of the UI timer since the value before."""
    untimed, value, ticked = [], None, False
    for event in seen:
        if event == TICK:
            ticked = True
        elif event != value:
            if value is not None and not ticked:
                untimed.append(event)
            value, ticked = event, False
    return untimed
