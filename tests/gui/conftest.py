"""Shared pieces for the GUI tests: a stand-in daemon behind the gateway's interface.

``FakeGateway`` has the gateway's method names and returns the real frozen records, so the
services and views under test run unchanged. Tests marked ``e2e_later`` use it where the real
daemon's native API (``/api/*``) does not exist yet; they become end-to-end tests against a
real daemon once it does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from app.gui.gateway import GatewayError
from app.gui.records import (
    ChatDelta,
    ChatDone,
    InstalledModel,
    ModelDetails,
    PullProgress,
    ServerInfo,
    SystemInfo,
)

GB = 1_000_000_000


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "e2e_later: uses FakeGateway until the daemon's native API lands"
    )


class FakeGateway:
    """A scriptable daemon: every call is recorded; ``hang`` blocks calls until released."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.up = True
        self.started = 0
        self.models_list: list[InstalledModel] = [
            InstalledModel(
                "qwen:0.5b",
                491_400_032,
                datetime(2026, 1, 1, tzinfo=UTC),
                "sha256:aa",
                "qwen2",
                "494M",
                "Q4_K_M",
                "gguf",
            ),
        ]
        self.capabilities = {"qwen:0.5b": frozenset({"completion"})}
        self.reply = ["Hello", " there", "!"]
        self.chat_error: GatewayError | None = None
        self.hang = threading.Event()
        self.hang.set()  # set = not hanging
        self.pull_events: list[PullProgress] = []
        self.gate: threading.Event | None = None  # when set, replies wait here after a token

    def _check(self, name: str, *args) -> None:
        self.calls.append((name, *args))
        self.hang.wait(10)
        if not self.up:
            raise GatewayError(
                "The localllm daemon is not answering.", "Restart it.", unavailable=True
            )

    def version(self) -> str:
        self._check("version")
        return "0.1.0"

    def start_daemon(self) -> None:
        self.calls.append(("start_daemon",))
        self.started += 1
        self.up = True

    def models(self):
        self._check("models")
        return tuple(self.models_list)

    def details(self, name: str) -> ModelDetails:
        self._check("details", name)
        return ModelDetails(
            name,
            template="{{ .Prompt }}",
            license="MIT",
            metadata=(("general.architecture", "qwen2"),),
            capabilities=self.capabilities.get(name, frozenset()),
            context_length=32768,
        )

    def running(self):
        self._check("running")
        return ()

    def delete(self, name: str) -> None:
        self._check("delete", name)
        self.models_list = [m for m in self.models_list if m.name != name]

    def copy(self, source: str, destination: str) -> None:
        self._check("copy", source, destination)

    def unload(self, name: str) -> None:
        self._check("unload", name)

    def pulls(self):
        self._check("pulls")
        return ()

    def pull(self, name: str) -> Iterator[PullProgress]:
        self._check("pull", name)
        return iter(self.pull_events or [PullProgress(name, "success")])

    def resume_pull(self, name: str):
        return self.pull(name)

    def pause_pull(self, name: str) -> None:
        self._check("pause_pull", name)

    def cancel_pull(self, name: str) -> None:
        self._check("cancel_pull", name)

    def import_gguf(self, name, path):
        self._check("import_gguf", name, path)
        return iter([PullProgress(name, "success")])

    def chat(self, model, turns, options=None, keep_alive=None):
        self._check("chat", model, tuple(turns), options)
        if self.chat_error is not None:
            raise self.chat_error
        return self._stream()

    def _stream(self):
        for part in self.reply:
            time.sleep(0.005)
            yield ChatDelta(part)
            if self.gate is not None:
                self.gate.wait(10)
        yield ChatDone("stop", eval_count=len(self.reply), eval_duration=50_000_000)

    def hub_search(self, query, limit=20):
        self._check("hub_search", query)
        return ()

    def hub_files(self, repo):
        self._check("hub_files", repo)
        return ()

    def system(self) -> SystemInfo:
        self._check("system")
        return SystemInfo(16 * GB, 8 * GB)

    def server_info(self) -> ServerInfo:
        self._check("server_info")
        return ServerInfo("127.0.0.1", 11435, False, False)

    def set_lan(self, enabled):
        self._check("set_lan", enabled)
        return ServerInfo("0.0.0.0", 11435, enabled, True)

    def api_key(self):
        self._check("api_key")
        return "sk-local-test"

    def logs(self, lines=200):
        self._check("logs")
        return "daemon started\n"

    def called(self, name: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == name]


@pytest.fixture
def gateway():
    fake = FakeGateway()
    yield fake
    fake.hang.set()  # never leave a worker blocked past the test
    if fake.gate is not None:
        fake.gate.set()


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
