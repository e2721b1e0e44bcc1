"""Shared pieces for the GUI tests: Qt's own checker for item models."""

from __future__ import annotations

import pytest


@pytest.fixture
def model_tester(qapp):
    """``check(model)`` attaches Qt's QAbstractItemModelTester; any violation fails the test."""
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtTest import QAbstractItemModelTester

    failures: list[str] = []
    testers = []

    def handler(_mode, _context, message: str) -> None:
        if message.startswith("FAIL!"):
            failures.append(message)

    previous = qInstallMessageHandler(handler)

    def check(model):
        mode = QAbstractItemModelTester.FailureReportingMode.Warning
        testers.append(QAbstractItemModelTester(model, mode))
        return model

    yield check
    qInstallMessageHandler(previous)
    assert not failures, failures
