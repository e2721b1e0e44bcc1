"""Hostile remotes, handled off the event loop and within bounds: an answer of the wrong shape
is the remote's error (the request goes to another replica), a tool call whose arguments never
end is cut at a cap, and a stream is read linearly and within its size limit."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from localllm.daemon.errors import RemoteError
from localllm.daemon.remotes import transport
from localllm.daemon.remotes.stream_state import StreamState
from localllm.daemon.remotes.transport import lines
from localllm.daemon.server import create_app
from tests.support.in_process import app_client, app_settings
from tests.support.raw_remote import RawRemote
from tests.support.remotes import admin_headers

HI = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
def front(tmp_path):
    app = create_app(
        app_settings(tmp_path, remote_check_interval=1), admin_token="test-admin-token"
    )
    with app_client(app, "127.0.0.1") as client:
        yield client


@pytest.fixture
def raw():
    started: list[RawRemote] = []

    def start(mode: str) -> RawRemote:
        started.append(RawRemote(mode))
        return started[-1]

    yield start
    for remote in started:
        remote.close()


def add(front: TestClient, name: str, urls: list[str], **fields) -> None:
    body = {"name": name, "urls": urls, **fields}
    answer = front.post("/api/remotes", json=body, headers=admin_headers("test-admin-token"))
    assert answer.status_code == 200, answer.text


def chat(front: TestClient, model: str):
    body = {"model": model, "messages": HI, "max_tokens": 4}
    return front.post("/v1/chat/completions", json=body)


def test_an_answer_of_the_wrong_shape_goes_to_the_other_replica(front, raw):
    odd, ok = raw("wrong_shape"), raw("ok")
    add(front, "pair", [odd.url, ok.url])
    answer = chat(front, "pair/m")
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "Hello world"
    [first, _] = front.get("/api/remotes").json()["remotes"][0]["replicas"]
    assert "sent an answer of the wrong shape" in first["error"]


def test_an_answer_of_the_wrong_shape_alone_is_a_502_that_says_so(front, raw):
    add(front, "odd", [raw("wrong_shape").url])
    answer = chat(front, "odd/m")
    assert answer.status_code == 502, answer.text
    assert "remote 'odd' sent an answer of the wrong shape" in answer.json()["error"]["message"]


def test_tool_call_arguments_that_never_end_are_cut_at_the_cap(front, raw):
    add(front, "endless", [raw("endless_call").url], timeout_seconds=120)
    answer = chat(front, "endless/m")
    assert answer.status_code == 502, answer.text
    message = answer.json()["error"]["message"]
    assert message == "remote 'endless' sent more than 16 Mi characters of tool-call arguments"


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]):
        self._chunks = chunks

    async def __aiter__(self):
        for chunk in self._chunks:
            yield chunk


def _read(chunks: list[bytes], limit: int = 1 << 30) -> list[bytes]:
    async def go() -> list[bytes]:
        response = httpx.Response(200, stream=_Chunks(chunks))
        return [line async for line in lines(response, "r", time.monotonic() + 600, limit)]

    return asyncio.run(go())


def test_a_long_line_in_small_chunks_comes_out_whole():
    line = b"data: " + b"x" * (1 << 20)
    chunks = [line[i : i + 256] for i in range(0, len(line), 256)]
    assert _read([b"a\nb", *chunks, b"\nc\n\nd"]) == [b"a", b"b" + line, b"c", b"", b"d"]


def test_a_stream_past_its_limit_is_cut():
    with pytest.raises(RemoteError, match="sent more than 1,000 bytes in one answer"):
        _read([b"data: x\n\n"] * 200, limit=1000)


def test_a_line_past_4_mib_is_cut_even_when_it_comes_whole():
    with pytest.raises(RemoteError, match="a line longer than 4 MiB"):
        _read([b"x" * (5 << 20) + b"\n"])


def test_a_big_answer_is_parsed_off_the_event_loop(monkeypatch):
    """A 2 MB model list (health checks fetch one every 10 s per replica; 15 MiB held the loop
    3 s) is parsed in a worker thread; a small one on the loop, where a thread costs more."""
    on_loop: list[bool] = []
    real = transport.loads

    def noting(text):
        on_loop.append(threading.current_thread() is threading.main_thread())
        return real(text)

    monkeypatch.setattr(transport, "loads", noting)
    big = json.dumps({"data": [{"id": f"model-{n}"} for n in range(100_000)]}).encode()
    for body in (big, b'{"data": []}'):
        response = httpx.Response(
            200, headers={"content-type": "application/json"}, stream=_Chunks([body])
        )
        asyncio.run(transport.json_body(response, "r"))
    assert on_loop == [False, True]


def test_tool_call_arguments_are_joined_once_at_the_end():
    state = StreamState("r")
    state.start_call(0, "c1", "f")
    for part in ('{"a": ', "1", "}"):
        state.add_arguments(0, part)
    state.add_arguments(1, "{}")  # arguments before a name: a call of their own
    [first, second] = state.tool_calls()
    assert (first.id, first.name, first.arguments) == ("c1", "f", '{"a": 1}')
    assert second.arguments == "{}" and second.name == ""
