"""The daemon's log stays bounded and private, whatever clients send and however the daemon was
started: a request's log line is cut to a few kilobytes (a hosted tool whose ``type`` is
megabytes long, to a model that does not exist, once put all of it in the line); the daemon
rotates ``daemon.log`` itself while it runs, under the launcher too, and runners' logs roll
over as well; and every log file, the ones a rollover makes included, is 0600 in a 0700
folder whatever the umask."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from pathlib import Path

import httpx
import pytest

from localllm.daemon.client.launcher import ensure_daemon
from localllm.daemon.runners.log_tail import RunnerLog
from localllm.daemon.settings import Settings
from tests.support.daemon import Daemon, launcher_env
from tests.support.modes import mode_of, umask
from tests.support.polling import wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions"),
]

SMALL_LOG = 16384  # LOCALLLM_LOG_MAX_BYTES: a line of many cut warnings is about 12 KB
LONG_NAME = f"{'n' * 96}/{'m' * 96}:{'t' * 96}"  # each part as long as a name's may be
BACKUPS = ("daemon.log.1", "daemon.log.2", "daemon.log.3")


def request_lines(text: str) -> list[str]:
    """The log lines of requests to ``/v1/responses``."""
    start = '{"event": "request", "method": "POST", "path": "/v1/responses"'
    return [line for line in text.splitlines() if line.startswith(start)]


def responses(url: str, tools: list[dict], model: str = "no-such-model") -> httpx.Response:
    body = {"model": model, "input": "hi", "tools": tools}
    return httpx.post(url + "/v1/responses", json=body, timeout=120)


def hosted_tools(marker: str, count: int = 25, chars: int = 2000) -> list[dict]:
    """Hosted tools (left out, each with a warning) whose types start with ``marker``."""
    return [{"type": f"{marker}{n}-" + "y" * chars} for n in range(count)]


def cut_characters(text: str) -> int:
    """How many characters the log line says it cut from ``text``."""
    found = re.search(r"\.\.\. \(([\d,]+) more characters\)$", text)
    assert found, text[-100:]
    return int(found.group(1).replace(",", ""))


def logged(path: Path, marker: str) -> bool:
    try:
        return marker in path.read_text(errors="replace")
    except FileNotFoundError:
        return False


def test_a_huge_hosted_tool_type_leaves_a_short_request_line(tmp_path):
    """9 MB of a hosted tool's type, 30 more hosted tools, and a model name whose error message
    is longer than 500 characters: the line keeps 500 characters of each string and 20
    warnings, and says what it cut."""
    logs = tmp_path / "logs"
    tools = [{"type": "x" * 9_000_000}] + [{"type": f"hosted-{n}"} for n in range(30)]
    with Daemon(tmp_path / "store", tmp_path / "terminal", env={"LOCALLLM_LOGS": str(logs)}) as d:
        answer = responses(d.url, tools, model=LONG_NAME)
        assert answer.status_code == 404, answer.text[:300]
        assert wait_for(lambda: request_lines(d.log())), "the request's line in the terminal"
        assert wait_for(lambda: request_lines((logs / "daemon.log").read_text()))
        terminal = d.log()
    (raw,) = request_lines((logs / "daemon.log").read_text())
    assert request_lines(terminal) == [raw]
    assert len(raw) < 16_000  # was 9 MB
    assert (logs / "daemon.log").stat().st_size < 64 << 10
    line = json.loads(raw)
    warnings = line["warnings"]
    assert len(warnings) == 21 and warnings[-1] == "... and 11 more"
    first = warnings[0]
    assert first.startswith("tools[0]: hosted tool 'xxx") and len(first) < 540
    assert cut_characters(first) > 8_999_000
    assert warnings[1] == "tools[1]: hosted tool 'hosted-0' left out: localllm runs no hosted tools"
    assert line["error"].startswith("model 'nnn") and len(line["error"]) < 540
    assert cut_characters(line["error"]) > 0


def test_the_launched_daemon_rotates_its_log_while_it_runs(tmp_path, monkeypatch):
    """Started by the launcher (its output sent elsewhere), the daemon rolls ``daemon.log``
    over to three older files as requests come, each file 0600 under umask 022 and the folder
    0700; the launcher's file of the daemon's output gets none of it, and ``/api/logs`` reads
    the newest lines."""
    logs = tmp_path / "logs"
    launcher_env(monkeypatch, tmp_path, LOCALLLM_LOG_MAX_BYTES=str(SMALL_LOG))
    settings = Settings.from_env()
    with umask(0o022):
        process = ensure_daemon(settings, timeout=60)
    assert process is not None
    try:
        for n in range(6):
            answer = responses(settings.base_url, hosted_tools(f"request-{n}-"))
            assert answer.status_code == 404
            assert wait_for(lambda n=n: logged(logs / "daemon.log", f"request-{n}-")), n
        served = httpx.get(settings.base_url + "/api/logs", timeout=30).json()["text"]
    finally:
        process.terminate()
        process.wait(30)
    files = [logs / "daemon.log", *(logs / name for name in BACKUPS)]
    assert [path.exists() for path in files] == [True] * 4
    assert not (logs / "daemon.log.4").exists()
    assert [mode_of(path) for path in files] == [0o600] * 4 and mode_of(logs) == 0o700
    assert all(path.stat().st_size <= SMALL_LOG for path in files)
    assert "request-5-" in served and "request-0-" not in served
    start_log = logs / "daemon-start.log"
    assert mode_of(start_log) == 0o600 and "request-" not in start_log.read_text()


@pytest.mark.parametrize("output", ["terminal", "log"])
def test_a_daemon_in_the_foreground_rotates_its_log(tmp_path, output):
    """In a terminal, or with its output sent to ``daemon.log`` itself (as a launchd agent
    does), the daemon rotates the file while it runs: each line lands once, the newest in the
    new ``daemon.log``, and every file is 0600 under umask 022 (the folder 0700 where the
    daemon made it)."""
    logs = tmp_path / "logs"
    terminal = tmp_path / "terminal" if output == "terminal" else logs
    env = {"LOCALLLM_LOGS": str(logs), "LOCALLLM_LOG_MAX_BYTES": str(SMALL_LOG)}
    with umask(0o022), Daemon(tmp_path / "store", terminal, env=env) as daemon:
        for n in range(4):
            assert responses(daemon.url, hosted_tools(f"request-{n}-")).status_code == 404
            assert wait_for(lambda n=n: logged(logs / "daemon.log", f"request-{n}-")), n
    files = [logs / "daemon.log", *(logs / name for name in BACKUPS)]
    assert [path.exists() for path in files] == [True] * 4
    assert [mode_of(path) for path in files] == [0o600] * 4
    assert output == "log" or mode_of(logs) == 0o700
    assert all(path.stat().st_size <= SMALL_LOG for path in files)
    everything = "".join(path.read_text() for path in files)
    assert [everything.count(f"tools[0]: hosted tool 'request-{n}-") for n in range(4)] == [1] * 4
    assert "request-3-" in (logs / "daemon.log").read_text()


def test_the_daemons_other_log_records_are_cut_too():
    """A record that quotes a client (the path of a request that failed) is cut at 64 KiB,
    saying how much it left out; a request line, bounded where it is made, is kept whole, as
    cut it would be no JSON."""
    from localllm.daemon.__main__ import _LogFormat

    def record(name: str, message: str) -> logging.LogRecord:
        return logging.LogRecord(name, logging.ERROR, __file__, 1, "%s", (message,), None)

    line = _LogFormat().format(record("localllm.server", "unhandled error on /" + "p" * 1_000_000))
    assert len(line) < (64 << 10) + 100 and cut_characters(line) > 900_000
    request = json.dumps({"event": "request", "path": "/" + "p" * 100_000})
    assert _LogFormat().format(record("localllm.requests", request)) == request


def test_a_runner_log_rolls_over_to_one_older_file(tmp_path):
    """A runner's stderr, appended to its model's file at every load, is rolled over too: the
    file and one older one, each within the size, both 0600 under umask 022."""
    path = tmp_path / "logs" / "runner-tiny.log"
    printed = [f"line {n} ".encode() + b"z" * 90 + b"\n" for n in range(100)]  # 10 KB

    async def pump() -> RunnerLog:
        log = RunnerLog(path, max_bytes=4096)
        log.note("starting runner for tiny")
        stderr = asyncio.StreamReader()
        for line in printed:
            stderr.feed_data(line)
        stderr.feed_eof()
        await log.pump(stderr)
        return log

    with umask(0o022):
        log = asyncio.run(pump())
    older = path.with_name("runner-tiny.log.1")
    assert path.stat().st_size <= 4096 and older.stat().st_size <= 4096
    assert not path.with_name("runner-tiny.log.2").exists()
    assert (mode_of(path), mode_of(older)) == (0o600, 0o600)
    assert (older.read_bytes() + path.read_bytes()).endswith(b"".join(printed[-60:]))
    assert log.lines[-1].startswith("line 99 ")
