"""A tiny raw-socket HTTP server for the remotes tests: it answers the way the test scripts
it, including the ways a hostile or broken engine would (a gigantic line, malformed events,
the wrong content type, silence, a stream held open until the test says go)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading

__all__ = ["BlackHole", "RawRemote"]

_MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()


def _chunk(text: str) -> bytes:
    return _delta({"content": text})


def _delta(delta: dict) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class RawRemote:
    """Serves ``GET /v1/models`` properly and ``POST /v1/chat/completions`` as ``mode`` says.

    Modes: "huge_models" (a model list of 20 MiB), "slow" (one chunk, then the rest once
    ``release`` is set), "huge_line", "malformed", "html", "silent" (headers, then nothing),
    "broken_mid" (a chunk, then garbage), "wrong_shape" (JSON events of the wrong shape:
    ``"choices": 1``), "endless_call" (a tool call whose arguments never end), "ok" (a short
    answer, as an engine gives it).
    """

    def __init__(self, mode: str):
        self.mode = mode
        self.heads: list[bytes] = []  # every request's line and headers, as received
        self.release = threading.Event()
        self.frozen = threading.Event()  # set: new connections are never answered
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                head = self._read_request(conn)
                self.heads.append(head)
                if self.frozen.is_set():
                    self.release.wait(60)
                    return
                if head.startswith(b"GET /v1/models") and self.mode == "huge_models":
                    conn.sendall(
                        _stream_head("application/json") + b'{"data": [' + b" " * (20 << 20)
                    )
                elif head.startswith(b"GET /v1/models"):
                    conn.sendall(_response("application/json", _MODELS))
                else:
                    self._chat(conn)
            except OSError:
                pass

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536) or b"\r\n\r\n"
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        sizes = [int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")]
        length = sizes[0] if sizes else 0
        while len(body) < length:
            body += conn.recv(65536) or b"x" * length
        return head

    def _chat(self, conn: socket.socket) -> None:
        sse = "text/event-stream"
        if self.mode == "html":
            conn.sendall(_response("text/html", b"<html>login page</html>"))
            return
        conn.sendall(_stream_head("text/html" if self.mode == "html" else sse))
        if self.mode == "silent":
            self.release.wait(60)
        elif self.mode == "huge_line":
            for _ in range(12):
                conn.sendall(b"data: " + b"x" * (1 << 20))
            self.release.wait(60)
        elif self.mode == "malformed":
            conn.sendall(b"data: {not json\n\n")
        elif self.mode == "broken_mid":
            conn.sendall(_chunk("Hello") + b"data: {oops\n\n")
        elif self.mode == "wrong_shape":
            conn.sendall(b'data: {"choices": 1}\n\n')
        elif self.mode == "endless_call":
            self._endless_call(conn)
        elif self.mode == "ok":
            conn.sendall(_chunk("Hello") + _chunk(" world") + _finish() + b"data: [DONE]\n\n")
        elif self.mode == "slow":
            conn.sendall(_chunk("Hello"))
            self.release.wait(60)
            conn.sendall(_chunk(" world") + _finish() + b"data: [DONE]\n\n")

    @staticmethod
    def _endless_call(conn: socket.socket) -> None:
        """A tool call, then 1 MiB parts of its arguments until the client hangs up."""
        call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{"}}
        conn.sendall(_delta({"tool_calls": [call]}))
        part = _delta({"tool_calls": [{"index": 0, "function": {"arguments": "x" * (1 << 20)}}]})
        while True:
            conn.sendall(part)

    def close(self) -> None:
        self._closed = True
        self.release.set()
        self._sock.close()


def _finish() -> bytes:
    body = {
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _response(kind: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


def _stream_head(kind: str) -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nConnection: close\r\n\r\n".encode()


class BlackHole:
    """An engine that takes every connection, reads what comes and never answers. It notes
    each connection in the order taken, and whether the client still holds it open (waits)
    or has given up on it, so a test can act while a request to it is certainly waiting."""

    def __init__(self):
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._given_up: list[threading.Event] = []
        self._taken: list[socket.socket] = []
        threading.Thread(target=self._take, daemon=True).start()

    @property
    def taken(self) -> int:
        """Connections taken so far."""
        return len(self._given_up)

    def waiting(self, index: int) -> bool:
        """Whether the client still waits on the connection taken ``index``-th (from 0)."""
        return not self._given_up[index].is_set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the thread waiting in accept
        self._sock.close()
        for conn in self._taken:
            conn.close()

    def _take(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            given_up = threading.Event()
            self._taken.append(conn)
            self._given_up.append(given_up)
            threading.Thread(target=self._hold, args=(conn, given_up), daemon=True).start()

    @staticmethod
    def _hold(conn: socket.socket, given_up: threading.Event) -> None:
        try:
            while conn.recv(65536):  # the request, then nothing until the client hangs up
                pass
        except OSError:
            pass
        given_up.set()
