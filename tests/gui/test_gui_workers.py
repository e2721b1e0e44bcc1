"""Blocking work runs off the UI thread: the event loop keeps turning while a call hangs.

Each wait here is for an event; its timeout only bounds a failure, far past a busy machine."""

from __future__ import annotations

import threading

from PySide6.QtCore import QTimer

from localllm.app.gui.workers import Workers


def test_the_event_loop_keeps_running_while_a_request_hangs(qtbot):
    workers = Workers()
    release = threading.Event()
    results, ticks = [], []
    workers.call(lambda: release.wait(60) and "answer", results.append)
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    qtbot.waitUntil(lambda: len(ticks) >= 10, timeout=30_000)  # painted while it hangs
    assert results == [] and workers.busy == 1
    release.set()
    qtbot.waitUntil(lambda: results == ["answer"], timeout=30_000)
    timer.stop()
    qtbot.waitUntil(lambda: workers.busy == 0, timeout=30_000)


def test_errors_are_delivered_not_raised(qtbot):
    workers = Workers()
    errors = []
    workers.call(lambda: 1 / 0, lambda _r: None, errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=30_000)
    assert isinstance(errors[0], ZeroDivisionError)


def test_a_cancelled_call_delivers_nothing(qtbot):
    workers = Workers()
    release = threading.Event()
    results = []
    job = workers.call(lambda: release.wait(60), results.append, results.append)
    job.cancel()
    release.set()
    qtbot.waitUntil(lambda: workers.busy == 0, timeout=30_000)
    assert results == []


def test_streams_deliver_items_in_order_then_done(qtbot):
    workers = Workers()
    items, done = [], []
    workers.stream(lambda: iter(range(50)), items.append, done.append)
    qtbot.waitUntil(lambda: done == [None], timeout=30_000)
    assert items == list(range(50))


def test_cancelling_a_stream_closes_its_iterator(qtbot):
    workers = Workers()
    first_sent, closed = threading.Event(), threading.Event()
    go_on = threading.Event()

    def source():
        try:
            yield 1
            first_sent.set()
            go_on.wait(60)
            yield 2
            yield 3
        finally:
            closed.set()

    items = []
    job = workers.stream(source, items.append)
    assert first_sent.wait(30)
    job.cancel()
    go_on.set()
    assert closed.wait(30)
    qtbot.waitUntil(lambda: workers.busy == 0, timeout=30_000)
    assert 2 not in items and 3 not in items


def test_a_job_that_outlives_shutdown_is_waited_for_before_the_app_exits(qtbot):
    """``shutdown`` gives running jobs a short wait; as the app exits, ``wait`` holds it until
    the last one is done (one finishing while Python tears the app down crashed the exit)."""
    workers = Workers()
    started, release = threading.Event(), threading.Event()
    ran = []

    def slow() -> None:
        started.set()
        release.wait(60)
        ran.append("done")

    workers.call(slow)
    assert started.wait(30)
    workers.shutdown(wait_ms=0)  # as the app's quit does: it does not wait long
    assert not workers.wait(0) and ran == []  # still running
    release.set()
    assert workers.wait(30_000) and ran == ["done"]
