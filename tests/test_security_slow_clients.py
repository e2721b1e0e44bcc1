"""Slow clients (slowloris) against the real daemon over raw sockets: a request head must
arrive whole within LOCALLLM_HEADER_TIMEOUT, a body may not stall for LOCALLLM_BODY_TIMEOUT,
and an upload that keeps sending is never cut, however long it takes.

No test here measures how long the daemon took: each waits for the hang-up itself (a socket
timeout far past the limit means it never came) and checks what came before it."""

from __future__ import annotations

import hashlib
import json
import select
import socket
import time

import httpx
import pytest

from tests.support.daemon import Daemon

pytestmark = pytest.mark.slow

LIMIT = 1.0  # seconds, both limits, for this daemon
NEVER = 60.0  # a socket waiting this long for the daemon means it never hung up
HEAD = b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("slow-clients")
    env = {"LOCALLLM_HEADER_TIMEOUT": str(LIMIT), "LOCALLLM_BODY_TIMEOUT": str(LIMIT)}
    with Daemon(root / "store", root / "logs", env=env) as running:
        yield running


def connect(daemon) -> socket.socket:
    return socket.create_connection(("127.0.0.1", daemon.port), timeout=NEVER)


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length, leaving the connection open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def read_until_closed(sock: socket.socket, reset_is_a_close: bool = False) -> bytes:
    """Everything the daemon sends until it hangs up (a socket timeout: it never did).

    A client that was still sending when the daemon hung up may get a reset after the answer
    instead of an end of stream (the daemon closed with bytes it had not read): with
    ``reset_is_a_close`` that reset ends the answer as a close does."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        if not reset_is_a_close:
            raise
    return received


def test_half_a_head_then_silence_is_cut_off_with_a_408(daemon):
    with connect(daemon) as sock:
        sock.sendall(b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"headers did not arrive within 1 s" in answer


def test_a_head_sent_a_byte_at_a_time_is_cut_off_although_it_moves(daemon):
    request = HEAD + b"X-Padding: " + b"a" * 200 + b"\r\n\r\n"  # a minute's sending at this pace
    sent = 0
    with connect(daemon) as sock:
        for byte in request:  # one byte every 0.2 s: never silent for a whole second
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the daemon hung up and reset the bytes that came after
                break
            sent += 1
            if select.select([sock], [], [], 0.2)[0]:  # it answered (or hung up)
                break
        answer = read_until_closed(sock, reset_is_a_close=True)
    assert sent < len(request), "the whole head went in: the daemon never cut it off"
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"headers did not arrive within 1 s" in answer


def test_a_connection_that_never_sends_is_closed(daemon):
    with connect(daemon) as sock:
        assert read_until_closed(sock) == b""


def test_the_next_head_on_a_kept_alive_connection_has_the_same_limit(daemon):
    with connect(daemon) as sock:
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: 127.")  # then nothing more
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_a_head_larger_than_16_kib_is_refused(daemon):
    with connect(daemon) as sock:
        sock.sendall(HEAD + b"X-Padding: " + b"a" * (17 << 10) + b"\r\n")
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 ")


def test_a_body_that_stops_arriving_gets_a_408_and_the_connection_closes(daemon):
    body = json.dumps({"model": "x" * 50}).encode()
    head = HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode()
    with connect(daemon) as sock:
        sock.sendall(head + body[:10])
        answer = read_until_closed(sock)
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in rest.lower()
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1]) == {
        "error": "the request body stopped arriving (nothing for 1 s)"
    }


def test_a_slow_upload_that_keeps_sending_is_not_cut(daemon):
    data = bytes(range(256)) * 64
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    pieces = [data[i : i + 512] for i in range(0, len(data), 512)]

    def slowly():
        for piece in pieces:  # 32 pieces, 0.1 s apart: past both limits, never 1 s silent
            time.sleep(0.1)
            yield piece

    response = httpx.post(
        f"{daemon.url}/api/blobs/{digest}",
        content=slowly(),
        headers={"Content-Length": str(len(data))},
        timeout=NEVER,
    )
    assert response.status_code == 201
    assert httpx.head(f"{daemon.url}/api/blobs/{digest}").status_code == 200


def test_ordinary_requests_are_untouched(daemon):
    with httpx.Client(base_url=daemon.url, timeout=NEVER) as client:
        assert client.get("/api/version").status_code == 200
        with connect(daemon) as late:  # idle between requests until a head deadline passes
            late.sendall(b"GET /api/version HTTP/1.1\r\nHost: 127.")  # opened after the idle began
            assert read_until_closed(late).startswith(b"HTTP/1.1 408 ")
        assert client.get("/api/tags").status_code == 200  # uvicorn's keep-alive decides
        answer = client.post("/api/show", json={"model": "missing"})
        assert answer.status_code == 404
