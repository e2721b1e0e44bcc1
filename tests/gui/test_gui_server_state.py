"""The Server page's Qt-free parts: the daemon log without the app's own polling, the
daemon's stop as the status bar tells it, and what moving the daemon to another port refuses.
The page over a real daemon is in ``test_gui_e2e_server``."""

from __future__ import annotations

import json
import socket

import pytest

from localllm.app.gui.state.daemon_control import DaemonControl
from localllm.app.gui.state.daemon_health import DaemonHealth, DaemonState
from localllm.app.gui.state.daemon_log import app_user_agent, is_app_polling, readable, visible_log
from localllm.daemon.client.launcher import DaemonStartError
from localllm.daemon.security.keys import ApiKeyStore
from localllm.daemon.settings import Settings


def _request(path: str, agent: str | None, method: str = "GET", status: int = 200) -> str:
    line = {"event": "request", "method": method, "path": path, "status": status}
    return json.dumps({**line, "user_agent": agent} if agent else line)


def test_the_log_leaves_out_the_apps_own_requests_unless_asked():
    ours = app_user_agent()
    assert ours.startswith("localllm-app/")
    log = "\n".join(
        [
            "2025-01-01 10:00:00 INFO localllm.scheduler: loaded tiny (100% CPU)",
            _request("/api/version", ours),
            _request("/v1/chat/completions", "OpenAI/Python 1.40.0"),
            _request("/api/pulls", ours),
            _request("/api/tags", None),
            json.dumps({"path": "/api/chat", "user_agent": ours, "model": "tiny"}),
            '{"event": "request", "user_agent": "localllm-app-imposter/1"}',
            "{not json localllm-app/",
        ]
    )
    shown = visible_log(log).splitlines()
    assert [line for line in shown if "/api/version" in line or "/api/pulls" in line] == []
    assert len(shown) == 6 and "/v1/chat/completions" in shown[1] and "/api/tags" in shown[2]
    assert "/api/chat" in shown[3]  # a chat the user sent through the app stays
    assert visible_log(log, show_app_requests=True) == log
    assert visible_log(log, show_app_requests=True, lines=2).splitlines() == log.splitlines()[-2:]
    assert is_app_polling(_request("/api/ps", ours)) and not is_app_polling("plain text")


def test_the_apps_header_alone_hides_no_failure_no_change_and_no_other_route():
    """Any program can say it is the app: only a successful read of a route the app polls is
    hidden, never what the user must see (someone refused, something changed)."""
    ours = "localllm-app/9"
    refused = _request("/api/remotes", ours, method="POST", status=403)
    shown = [
        refused,
        _request("/api/remotes", ours, method="POST", status=200),  # a remote added
        _request("/api/delete", ours, method="DELETE", status=200),
        _request("/api/ps", ours, status=401),
        _request("/api/logs", ours, status=500),
        _request("/v1/responses/resp_1", ours),  # not a route the app polls
        json.dumps({"event": "request", "method": "GET", "path": "/api/ps", "user_agent": ours}),
        json.dumps({"method": "GET", "path": ["/api/ps"], "status": 200, "user_agent": ours}),
    ]
    hidden = [
        _request("/api/remotes", ours),
        _request("/api/version", ours, method="HEAD"),
        _request("/api/show", ours, method="POST"),  # a model's details: a POST that reads
    ]
    log = "\n".join(shown + hidden)
    assert visible_log(log).splitlines() == shown
    assert readable(refused) == "POST /api/remotes  403  (localllm-app/9)"


def test_a_stop_on_purpose_is_said_and_never_undone_behind_the_users_back():
    health = DaemonHealth()
    health.answered("0.1.0")
    assert health.stopping().text() == "Stopping the daemon…" and not health.status.can_restart
    stopped = health.stopped()
    assert stopped.state is DaemonState.STOPPED and stopped.can_restart
    assert "Start it" in stopped.text()
    assert health.no_answer() is False and health.status == stopped  # no autostart


def test_moving_the_daemon_refuses_what_cannot_work(tmp_path):
    keys = ApiKeyStore(tmp_path, use_keyring=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy_port = taken.getsockname()[1]
        control = DaemonControl(Settings(host="127.0.0.1", port=7000), keys=keys)
        never = lambda: pytest.fail("nothing is stopped for a move that cannot work")  # noqa: E731
        with pytest.raises(DaemonStartError, match=f"port {busy_port} is in use"):
            control.move(busy_port, stop=never)
        with pytest.raises(DaemonStartError, match="from 1 to 65535"):
            control.move(70000, stop=never)
        assert control.settings.port == 7000  # unchanged
    remote = DaemonControl(Settings(host="192.0.2.10", port=7000), keys=keys)
    with pytest.raises(DaemonStartError, match="another computer"):
        remote.move(7001, stop=never)
    with pytest.raises(DaemonStartError, match="another computer"):
        remote.stop(stop=never)


def test_request_lines_read_as_words_not_json():
    line = json.dumps(
        {
            "event": "request",
            "method": "POST",
            "path": "/api/chat",
            "status": 200,
            "duration_ms": 812.4,
            "user_agent": "x",
            "model": "gemma3",
        }
    )
    assert readable(line) == "POST /api/chat  200  812 ms  model gemma3  (x)"
    assert readable("2025-01-01 INFO loaded") == "2025-01-01 INFO loaded"
    assert readable("{not json") == "{not json"
