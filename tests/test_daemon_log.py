"""The daemon's log is in ``<log dir>/daemon.log`` (what ``GET /api/logs`` and the app's Server
page read) however the daemon was started: by the launcher, which sends its output to a file
of its own, in a terminal with ``localllm serve``, whose output goes elsewhere, or with its
output sent to the log itself, as a launchd agent does. (Its bounds: ``test_log_bounds``.)"""

from __future__ import annotations

import json
import stat

import httpx
import pytest

from localllm.daemon.client.launcher import DaemonStartError, ensure_daemon
from localllm.daemon.settings import Settings
from tests.support.daemon import Daemon, launcher_env
from tests.support.modes import mode_of

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


def test_a_daemon_that_refuses_its_settings_shows_why_and_not_older_lines(tmp_path, monkeypatch):
    """What the daemon printed before its log was set up is in the launcher's error, from a
    0600 file of its output emptied at each start; lines of earlier runs in the log are not."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    (logs / "daemon.log").write_text("an earlier daemon's line\n")
    launcher_env(monkeypatch, tmp_path)
    settings = Settings.from_env()
    monkeypatch.setenv("LOCALLLM_KEEP_ALIVE", "a while")  # the daemon it starts refuses it
    for _ in range(2):  # the second start's file holds its own output only
        with pytest.raises(DaemonStartError) as caught:
            ensure_daemon(settings, timeout=60)
        assert "exited (status 2)" in str(caught.value)
        assert [line for line in caught.value.details if "KEEP_ALIVE" in line] == [
            "localllm: LOCALLLM_KEEP_ALIVE must be a number, got 'a while'"
        ]
        assert not any("earlier daemon" in line for line in caught.value.details)
    assert (logs / "daemon-start.log").read_text().count("LOCALLLM_KEEP_ALIVE") == 1
    assert mode_of(logs / "daemon-start.log") == 0o600
