"""``daemon.client.launcher``: when the daemon is started in the background, and when it is not."""

from __future__ import annotations

import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from localllm.daemon.client import launcher
from localllm.daemon.client.launcher import (
    DaemonStartError,
    connect_url,
    ensure_daemon,
    is_loopback,
)
from localllm.daemon.settings import Settings
from tests.support.daemon import free_port
from tests.support.modes import mode_of, umask


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("app.localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_connect_url_maps_wildcards_to_this_machine():
    assert connect_url(Settings(host="0.0.0.0", port=1234)) == "http://127.0.0.1:1234"
    assert connect_url(Settings(host="::", port=1234)) == "http://[::1]:1234"
    assert connect_url(Settings(host="10.0.0.5", port=80)) == "http://10.0.0.5:80"


class _Answer(BaseHTTPRequestHandler):
    body = b"localllm is running"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def answering(request):
    """An HTTP server on a free port answering ``GET /`` with ``request.param``."""
    handler = type("Handler", (_Answer,), {"body": request.param})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def no_spawn(*args, **kwargs):
    raise AssertionError("the daemon must not be started here")


@pytest.mark.parametrize("answering", [b"localllm is running"], indirect=True)
def test_a_running_daemon_is_used(answering, tmp_path, monkeypatch):
    monkeypatch.setattr(launcher.subprocess, "Popen", no_spawn)
    ensure_daemon(Settings(port=answering, data_dir=tmp_path, log_dir=tmp_path))


@pytest.mark.parametrize("answering", [b"<html>some other server</html>"], indirect=True)
def test_something_else_on_the_port_is_an_error(answering, tmp_path, monkeypatch):
    monkeypatch.setattr(launcher.subprocess, "Popen", no_spawn)
    with pytest.raises(DaemonStartError, match="something other than localllm answers"):
        ensure_daemon(Settings(port=answering, data_dir=tmp_path, log_dir=tmp_path))


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10"])
def test_a_network_address_is_never_started(host, tmp_path, monkeypatch):
    monkeypatch.setattr(launcher.subprocess, "Popen", no_spawn)
    monkeypatch.setattr(launcher, "daemon_answers", lambda url, timeout=2.0: False)
    settings = Settings(host=host, port=free_port(), data_dir=tmp_path, log_dir=tmp_path)
    with pytest.raises(DaemonStartError) as caught:
        ensure_daemon(settings)
    assert "is not reachable" in str(caught.value) and "localllm serve" in str(caught.value)


def test_a_daemon_that_cannot_start_reports_its_log(tmp_path, monkeypatch):
    """The port is taken by something that hangs up at once: the spawned daemon cannot bind,
    exits, and the error carries the end of its log."""
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    stop = threading.Event()

    def hang_up():
        blocker.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = blocker.accept()
            except OSError:
                continue
            connection.close()

    threading.Thread(target=hang_up, daemon=True).start()
    for key, value in {
        "LOCALLLM_HOST": f"127.0.0.1:{port}",
        "LOCALLLM_DATA": str(tmp_path / "data"),
        "LOCALLLM_MODELS": str(tmp_path / "models"),
        "LOCALLLM_LOGS": str(tmp_path / "logs"),
    }.items():
        monkeypatch.setenv(key, value)
    started = []
    try:
        with pytest.raises(DaemonStartError) as caught:
            ensure_daemon(Settings.from_env(), timeout=60, on_start=lambda: started.append(1))
    finally:
        stop.set()
        blocker.close()
    assert started == [1]
    assert "exited" in str(caught.value) and "daemon.log" in str(caught.value)
    assert any("address already in use" in line.lower() for line in caught.value.details)
    assert (tmp_path / "logs" / "daemon.log").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_daemon_log_is_private_whatever_the_umask(tmp_path, monkeypatch):
    """A daemon started in the background (here one that cannot bind: its port is taken)
    logs into a 0600 file in a 0700 folder, even under umask 0; an older readable log is
    tightened."""
    logs, data, old = tmp_path / "logs", tmp_path / "data", tmp_path / "old-logs"
    old.mkdir()
    (old / "daemon.log").write_text("an older daemon's lines\n")
    (old / "daemon.log").chmod(0o644)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: the probe is refused at once
        monkeypatch.setenv("LOCALLLM_HOST", f"127.0.0.1:{taken.getsockname()[1]}")
        monkeypatch.setenv("LOCALLLM_MODELS", str(tmp_path / "models"))
        monkeypatch.setenv("LOCALLLM_DATA", str(data))
        for log_dir in (logs, old):
            monkeypatch.setenv("LOCALLLM_LOGS", str(log_dir))
            with umask(0), pytest.raises(DaemonStartError):
                ensure_daemon(Settings.from_env(), timeout=60)
    assert "address already in use" in (logs / "daemon.log").read_text().lower()
    assert (mode_of(logs), mode_of(logs / "daemon.log"), mode_of(data)) == (0o700, 0o600, 0o700)
    assert mode_of(old / "daemon.log") == 0o600
