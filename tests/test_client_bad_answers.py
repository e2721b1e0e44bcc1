"""What ``daemon.client`` (and so the CLI and the app) makes of answers it cannot read and of
a daemon that does not answer, against real servers on 127.0.0.1 that answer that way: a body,
a stream line or an event that is not JSON is a ``ServerError`` quoting its start on one line;
a wait that runs out is a ``DaemonTimeout`` ("did not answer within"), not "cannot reach";
and ``localllm`` says one line and exits non-zero, no traceback."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from localllm.daemon.client import Client, DaemonTimeout, DaemonUnavailable, ServerError
from tests.support.cli_e2e import cli_env, run_cli
from tests.support.raw_remote import BlackHole

HTML = b"<html>\x1b[2J\x1b[31mSign in\r\nto the \xe2\x80\xaeportal</html>" + b" " * 5000
CHUNK = {
    "model": "m",
    "created_at": "2020-01-01T00:00:00Z",
    "message": {"role": "assistant", "content": "Hi"},
}
COMPLETION_CHUNK = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "Hi"}}],
}


def response(body: bytes, kind: str = "text/html", status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


class ScriptedServer:
    """Answers each ``METHOD /path`` with the raw bytes it was given (404 for anything else);
    ``GET /`` says "localllm is running", so the CLI takes it for the daemon."""

    def __init__(self, answers: dict[str, bytes]):
        self.answers = {"GET /": response(b"localllm is running", "text/plain"), **answers}
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._sock.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                line = self._read_request(conn)
                conn.sendall(self.answers.get(line, response(b"", status="404 Not Found")))

    @staticmethod
    def _read_request(conn: socket.socket) -> str:
        """The request's method and path; its headers and body are read and dropped."""
        data = b""
        while b"\r\n\r\n" not in data and (more := conn.recv(65536)):
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        sizes = [int(h.split(":")[1]) for h in lines if h.lower().startswith("content-length")]
        while len(body) < (sizes[0] if sizes else 0) and (more := conn.recv(65536)):
            body += more
        method, path, _ = lines[0].split(" ", 2)
        return f"{method} {path.split('?')[0]}"


@pytest.fixture
def server():
    ndjson = json.dumps(CHUNK).encode() + b"\n<html>oops</html>\n"
    sse = b"data: " + json.dumps(COMPLETION_CHUNK).encode() + b"\n\ndata: {not json\n\n"
    running = ScriptedServer(
        {
            "GET /api/tags": response(HTML),
            "GET /api/version": response(b"", "application/json"),
            "POST /api/chat": response(ndjson, "application/x-ndjson"),
            "POST /v1/chat/completions": response(sse, "text/event-stream"),
            "GET /api/ps": response(HTML, status="502 Bad Gateway"),
        }
    )
    yield running
    running.close()


def one_terminal_line(message: str) -> bool:
    return message.isprintable() and len(message) < 300


def test_a_body_that_is_not_json_is_a_server_error_quoting_its_start(server):
    with Client(server.url, timeout=30) as client, pytest.raises(ServerError) as caught:
        client.list_models()
    message = caught.value.message
    quoted = '"<html> [2J [31mSign in to the portal</html>..."'  # escapes and controls gone
    assert message.startswith(f"the daemon's answer to /api/tags is not JSON: {quoted}; ")
    assert caught.value.code == "unexpected_answer" and one_terminal_line(message)


def test_an_empty_body_says_so(server):
    with Client(server.url, timeout=30) as client, pytest.raises(ServerError) as caught:
        client.version()
    assert caught.value.message.startswith(
        "the daemon's answer to /api/version is not JSON: an empty body;"
    )


def test_a_stream_line_that_is_not_json_is_a_server_error(server):
    with Client(server.url, timeout=30) as client:
        chunks = client.chat("m", [{"role": "user", "content": "Hi"}])
        assert next(chunks).message.content == "Hi"
        with pytest.raises(ServerError, match=r'line to /api/chat is not JSON: "<html>oops'):
            next(chunks)


def test_an_event_that_is_not_json_is_a_server_error(server):
    with Client(server.url, timeout=30) as client:
        chunks = client.openai_chat("m", [{"role": "user", "content": "Hi"}])
        assert next(chunks).choices[0].delta.content == "Hi"
        with pytest.raises(ServerError, match=r'event to /v1/chat/completions is not JSON: "\{not'):
            next(chunks)


def test_an_error_status_whose_body_is_not_json_is_quoted_on_one_line(server):
    with Client(server.url, timeout=30) as client, pytest.raises(ServerError) as caught:
        client.running()
    assert caught.value.status == 502 and one_terminal_line(caught.value.message)
    assert caught.value.message.startswith("<html> [2J [31mSign in to the portal</html>")


@pytest.fixture
def silent():
    hole = BlackHole()
    yield hole
    hole.close()


@pytest.mark.slow  # waits out a timeout
def test_a_wait_that_runs_out_is_a_timeout_and_a_refusal_still_cannot_reach(silent):
    with Client(silent.url, timeout=0.5) as client, pytest.raises(DaemonTimeout) as caught:
        client.list_models()
    assert caught.value.message == (
        f"the daemon at {silent.url} did not answer within 0.5 seconds; it may be busy "
        "(loading a model, a long prompt): try again once it is done"
    )
    with Client(silent.url, timeout=0.5) as client, pytest.raises(DaemonTimeout):
        next(client.chat("m", [{"role": "user", "content": "Hi"}]))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{taken.getsockname()[1]}"  # bound, not listening: refused
        with Client(url, timeout=5) as client, pytest.raises(DaemonUnavailable) as refused:
            client.list_models()
    assert not isinstance(refused.value, DaemonTimeout)
    assert refused.value.message.startswith(f"cannot reach the daemon at {url}")


def test_the_cli_says_one_line_and_fails(server, tmp_path):
    done = run_cli(["list"], cli_env(tmp_path, server.port), timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: the daemon's answer to /api/tags is not JSON: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "\x1b" not in done.stderr
