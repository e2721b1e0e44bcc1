"""Slow clients (slowloris) against the real daemon over raw sockets: a request head must
arrive whole within LOCALLLM_HEADER_TIMEOUT, a body may not stall for LOCALLLM_BODY_TIMEOUT,
and an upload that keeps sending is never cut, however long it takes."""

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
CUT_OFF_WITHIN = 8.0  # generous: the daemon must have hung up by then
HEAD = b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("slow-clients")
    env = {"LOCALLLM_HEADER_TIMEOUT": str(LIMIT), "LOCALLLM_BODY_TIMEOUT": str(LIMIT)}
    with Daemon(root / "store", root / "logs", env=env) as running:
        yield running


def connect(daemon) -> socket.socket:
    return socket.create_connection(("127.0.0.1", daemon.port), timeout=CUT_OFF_WITHIN + 5)


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


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the daemon sends until it closes the connection, and how long that took."""
    started, received = time.monotonic(), b""
    while chunk := sock.recv(65536):  # a socket timeout here means the daemon never hung up
        received += chunk
    return received, time.monotonic() - started


def test_half_a_head_then_silence_is_cut_off_with_a_408(daemon):
    with connect(daemon) as sock:
        sock.sendall(b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        answer, waited = read_until_closed(sock)
    assert waited < CUT_OFF_WITHIN
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"headers did not arrive within 1 s" in answer


def test_a_head_sent_a_byte_at_a_time_is_cut_off_although_it_moves(daemon):
    request = HEAD + b"X-Padding: " + b"a" * 200 + b"\r\n\r\n"
    with connect(daemon) as sock:
        started = time.monotonic()
        answer = b""
        for byte in request:  # one byte every 0.2 s: never silent for a whole second
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the daemon hung up
                break
            if select.select([sock], [], [], 0.2)[0]:
                answer, _ = read_until_closed(sock)
                break
        waited = time.monotonic() - started
    assert waited < CUT_OFF_WITHIN
    assert answer.startswith(b"HTTP/1.1 408 ") or answer == b""


def test_a_connection_that_never_sends_is_closed(daemon):
    with connect(daemon) as sock:
        answer, waited = read_until_closed(sock)
    assert answer == b"" and waited < CUT_OFF_WITHIN


def test_the_next_head_on_a_kept_alive_connection_has_the_same_limit(daemon):
    with connect(daemon) as sock:
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: 127.")  # then nothing more
        answer, waited = read_until_closed(sock)
    assert waited < CUT_OFF_WITHIN
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_a_head_larger_than_16_kib_is_refused(daemon):
    with connect(daemon) as sock:
        sock.sendall(HEAD + b"X-Padding: " + b"a" * (17 << 10) + b"\r\n")
        answer, _ = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 ")


def test_a_body_that_stops_arriving_gets_a_408_and_the_connection_closes(daemon):
    body = json.dumps({"model": "x" * 50}).encode()
    head = HEAD + f"Content-Length: {len(body)}\r\n\r\n".encode()
    with connect(daemon) as sock:
        sock.sendall(head + body[:10])
        answer, waited = read_until_closed(sock)
    assert waited < CUT_OFF_WITHIN
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in rest.lower()
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1]) == {
        "error": "the request body stopped arriving (nothing for 1 s)"
    }


def test_a_slow_upload_that_keeps_sending_is_not_cut(daemon):
    data = bytes(range(256)) * 64
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    pieces = [data[i : i + 2048] for i in range(0, len(data), 2048)]

    def slowly():
        for piece in pieces:  # 8 pieces, 0.4 s apart: 3 s in all, well past both limits
            time.sleep(0.4)
            yield piece

    response = httpx.post(
        f"{daemon.url}/api/blobs/{digest}",
        content=slowly(),
        headers={"Content-Length": str(len(data))},
        timeout=30,
    )
    assert response.status_code == 201
    assert httpx.head(f"{daemon.url}/api/blobs/{digest}").status_code == 200


def test_ordinary_requests_are_untouched(daemon):
    with httpx.Client(base_url=daemon.url) as client:
        assert client.get("/api/version").status_code == 200
        time.sleep(LIMIT * 1.5)  # idle between requests: uvicorn's keep-alive decides
        assert client.get("/api/tags").status_code == 200
        answer = client.post("/api/show", json={"model": "missing"})
        assert answer.status_code == 404
