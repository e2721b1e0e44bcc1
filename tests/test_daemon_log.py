"""The daemon's log is in ``<log dir>/daemon.log`` (what ``GET /api/logs`` and the app's Server
page read) however the daemon was started: by the launcher, which sends its output there, or
in a terminal with ``localllm serve``, whose output goes elsewhere."""

from __future__ import annotations

import json
import stat

import httpx
import pytest

from tests.support.daemon import Daemon

pytestmark = pytest.mark.slow


def request_lines(text: str, path: str) -> list[dict]:
    return [
        json.loads(line)
        for line in text.splitlines()
        if line.startswith('{"event": "request"') and f'"{path}"' in line
    ]


def test_a_daemon_in_a_terminal_writes_its_log_file_too(tmp_path):
    logs = tmp_path / "logs"
    # its output goes to a file of the test's own (the terminal), not to <logs>/daemon.log
    with Daemon(tmp_path / "store", tmp_path / "terminal", env={"LOCALLLM_LOGS": str(logs)}) as d:
        missing = httpx.post(d.url + "/api/show", json={"model": "missing"}, timeout=30)
        assert missing.status_code == 404
        served = httpx.get(d.url + "/api/logs", params={"lines": 50}, timeout=30).json()["text"]
        terminal = d.log()
    (line,) = request_lines(served, "/api/show")
    assert line["status"] == 404 and line["error"] == missing.json()["error"]
    assert request_lines(terminal, "/api/show") == [line]  # the terminal shows it as well
    assert "Uvicorn running on" in served  # the daemon's own lines are there too
    assert stat.S_IMODE((logs / "daemon.log").stat().st_mode) == 0o600


def test_a_daemon_whose_output_is_the_log_writes_each_line_once(tmp_path):
    with Daemon(tmp_path / "store", tmp_path / "logs") as daemon:  # the launcher's way
        httpx.get(daemon.url + "/api/version", timeout=30)
        served = httpx.get(daemon.url + "/api/logs", timeout=30).json()["text"]
    assert len(request_lines(daemon.log(), "/api/version")) == 1
    assert len(request_lines(served, "/api/version")) == 1
