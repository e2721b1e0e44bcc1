"""The Qt binding itself: a known reference-counting bug must not be in the installed PySide6.

PySide6 6.12.0 returns ``True`` from ``SignalInstance.emit`` without taking a reference, so
every emit drops one reference to ``True``; after about 10,000 emits (a few long streamed
replies, each token a signal) Python aborts with "bool_dealloc". pyproject.toml keeps that
release out; this test fails if a version with the bug is installed anyway.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal

EMITS = 2_000


class _Emitter(QObject):
    plain = Signal()
    value = Signal(object)


def test_emitting_signals_leaves_true_alone(qapp):
    emitter = _Emitter()
    received: list[object] = []
    emitter.value.connect(received.append)
    before = sys.getrefcount(True)
    for n in range(EMITS):
        emitter.plain.emit()
        emitter.value.emit(n)
    drift = sys.getrefcount(True) - before
    assert len(received) == EMITS
    assert abs(drift) < EMITS // 10, f"{drift} references to True lost over {EMITS} emits"
