"""Remotes when things go wrong, with real engines on loopback: a replica killed under 16
concurrent streams, a replica that stops answering (ejected, then back), hostile remotes (a
raw socket server), a black hole that never answers (the model list stays fast), and
``python -m llama_cpp.server`` as a remote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import httpx
import ollama
import openai
import pytest

from tests.support.daemon import Daemon, free_port, make_store
from tests.support.polling import wait_for
from tests.support.raw_remote import BlackHole, RawRemote
from tests.support.remotes import add_remote, front_daemon, remove_remote

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hello there"}]


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    with front_daemon(tmp_path_factory.mktemp("faults-front")) as daemon:
        yield daemon


@pytest.fixture(scope="module")
def back_store(tmp_path_factory, tiny_model_path):
    return make_store(tmp_path_factory.mktemp("faults-store"), {"tiny": tiny_model_path})


@pytest.fixture(scope="module")
def steady(back_store, tmp_path_factory):
    with Daemon(back_store, tmp_path_factory.mktemp("steady")) as daemon:
        yield daemon


def _replicas(front: Daemon, name: str) -> list[dict]:
    remotes = httpx.get(front.url + "/api/remotes", timeout=10).json()["remotes"]
    return next(r for r in remotes if r["name"] == name)["replicas"]


def _chat(front: Daemon, model: str, timeout: float = 60, **extra) -> httpx.Response:
    body = {"model": model, "messages": HI, "max_tokens": 4, **extra}
    return httpx.post(front.url + "/v1/chat/completions", json=body, timeout=timeout)


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("huge_line", "sent a line longer than 4 MiB"),
        ("malformed", "sent an event that is not JSON"),
        ("html", "answered with content type 'text/html'"),
        ("silent", "did not finish within its timeout"),
    ],
)
def test_a_hostile_remote_gives_a_clear_error(front, mode, says):
    raw = RawRemote(mode)
    name = mode.replace("_", "-")
    try:
        assert add_remote(front, name, [raw.url], timeout_seconds=2).status_code == 200
        r = _chat(front, f"{name}/m", timeout=60)  # a 502, not this client's own timeout
        assert r.status_code == 502, r.text
        assert f"remote {name!r} {says}" in r.json()["error"]["message"]
    finally:
        remove_remote(front, name)
        raw.close()


def test_a_gigantic_model_list_marks_the_replica_unhealthy(front):
    raw = RawRemote("huge_models")
    try:
        assert add_remote(front, "huge", [raw.url]).status_code == 200
        replica = _replicas(front, "huge")[0]
        assert not replica["healthy"]
        assert replica["error"] == "remote 'huge' sent more than 16 MiB"
        assert httpx.get(front.url + "/api/tags", timeout=10).status_code == 200
    finally:
        remove_remote(front, "huge")
        raw.close()


def test_a_failure_mid_stream_ends_with_an_error_in_each_wire_format(front):
    raw = RawRemote("broken_mid")
    try:
        assert add_remote(front, "mid", [raw.url]).status_code == 200
        client = front.openai(timeout=30)
        with pytest.raises(openai.APIError, match="remote 'mid' sent an event that is not JSON"):
            for _ in client.chat.completions.create(model="mid/m", messages=HI, stream=True):
                pass
        lines = []
        with pytest.raises(ollama.ResponseError, match="remote 'mid' sent an event"):
            for part in ollama.Client(host=front.url, timeout=30).chat("mid/m", HI, stream=True):
                lines.append(part.message.content)
        assert lines == ["Hello"]  # what came before the failure got through
    finally:
        remove_remote(front, "mid")
        raw.close()


def test_ps_lists_a_remote_model_while_it_is_in_use(front):
    raw = RawRemote("slow")
    try:
        assert add_remote(front, "slow", [raw.url]).status_code == 200
        body = {"model": "slow/m", "messages": HI, "stream": True}
        with httpx.stream("POST", front.url + "/v1/chat/completions", json=body) as stream:
            lines = stream.iter_lines()
            assert next(line for line in lines if "Hello" in line)  # streamed before the rest
            running = httpx.get(front.url + "/api/ps", timeout=10).json()["models"]
            assert [(m["name"], m["remote"], m["active_requests"]) for m in running] == [
                ("slow/m", "slow", 1)
            ]
            raw.release.set()
            assert [line for line in lines if line][-1] == "data: [DONE]"
        assert wait_for(lambda: not httpx.get(front.url + "/api/ps").json()["models"], 10)
    finally:
        remove_remote(front, "slow")
        raw.close()


def test_lists_answer_while_a_remote_never_answers(front, steady):
    hole = BlackHole()
    try:
        assert add_remote(front, "hole", [hole.url], timeout_seconds=5).status_code == 200
        assert add_remote(front, "ok", [steady.url]).status_code == 200
        check = hole.taken  # the next health check of the hole: it will hang for 5 s
        assert wait_for(lambda: hole.taken > check, 60), "the hole was never checked again"
        for path in ("/api/tags", "/v1/models", "/api/remotes", "/api/ps"):
            assert httpx.get(front.url + path, timeout=60).status_code == 200
        assert hole.waiting(check), "a list waited for the hole's check to give up"
        assert wait_for(lambda: not hole.waiting(check), 60)  # which it does, by its timeout
        assert "ok/tiny" in [m["name"] for m in httpx.get(front.url + "/api/tags").json()["models"]]
        assert _chat(front, "ok/tiny").status_code == 200  # other remotes are not held up
        r = _chat(front, "hole/m", timeout=30)
        assert r.status_code == 503 and "'hole' has no healthy replica" in r.text
        assert "health check timed out" in r.text
    finally:
        for name in ("hole", "ok"):
            remove_remote(front, name)
        hole.close()


def test_a_replica_that_stops_answering_is_ejected_and_comes_back(
    front, steady, back_store, tmp_path
):
    with Daemon(back_store, tmp_path / "paused") as paused:
        urls = [steady.url, paused.url]
        assert add_remote(front, "pair", urls, timeout_seconds=3).status_code == 200
        try:
            paused.process.send_signal(signal.SIGSTOP)
            assert wait_for(lambda: not _replicas(front, "pair")[1]["healthy"], 20)
            assert "timed out" in _replicas(front, "pair")[1]["error"]
            for _ in range(4):  # all go to the replica that answers
                assert _chat(front, "pair/tiny", timeout=30).status_code == 200
            paused.process.send_signal(signal.SIGCONT)
            assert wait_for(lambda: _replicas(front, "pair")[1]["healthy"], 20)
            assert _replicas(front, "pair")[1]["error"] is None
        finally:
            paused.process.send_signal(signal.SIGCONT)
            remove_remote(front, "pair")


def _stream(front: Daemon, result: dict) -> None:
    """One streamed chat; ``result`` gets its chunks and how it ended."""
    body = {"model": "kill/tiny", "messages": HI, "max_tokens": 96, "stream": True}
    result["chunks"] = 0
    try:
        with httpx.stream("POST", front.url + "/v1/chat/completions", json=body, timeout=60) as s:
            if s.status_code != 200:
                result["end"] = f"http {s.status_code} " + s.read().decode()
                return
            for line in s.iter_lines():
                if line == "data: [DONE]":
                    result["end"] = "done"
                elif line.startswith("data:") and "error" in json.loads(line[5:]):
                    result["end"] = "error: " + json.loads(line[5:])["error"]["message"]
                elif line.startswith("data:"):
                    result["chunks"] += 1
    except httpx.HTTPError as error:
        result["end"] = f"client error {error!r}"


def test_killing_a_replica_under_16_streams(front, steady, back_store, tmp_path):
    with Daemon(back_store, tmp_path / "victim") as victim:
        urls = [steady.url, victim.url]
        assert add_remote(front, "kill", urls, max_concurrency=2).status_code == 200
        try:
            results = [{} for _ in range(16)]
            threads = [threading.Thread(target=_stream, args=(front, r)) for r in results]
            for thread in threads:
                thread.start()
            assert wait_for(lambda: sum(r.get("chunks", 0) > 0 for r in results) >= 2, 60)
            runners = victim.runner_pids()
            victim.process.kill()
            for pid in runners:
                os.kill(pid, signal.SIGKILL)
            for thread in threads:
                thread.join(90)
            assert not any(t.is_alive() for t in threads), "a request hung"
            failed = [r for r in results if r.get("end") != "done"]
            assert len(failed) <= 2, failed  # at most the two streaming on the victim
            for result in failed:  # those had started; the others all moved over
                assert result["chunks"] > 0 and result["end"].startswith("error: remote 'kill'")
            assert _chat(front, "kill/tiny").status_code == 200
        finally:
            remove_remote(front, "kill")


@pytest.fixture(scope="module")
def llama_cpp_server(tiny_model_path, tmp_path_factory):
    port = free_port()
    log = (tmp_path_factory.mktemp("lcpp") / "server.log").open("wb")
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(tiny_model_path),
        "--model_alias", "tiny", "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
        "--n_ctx", "512",
        # by default it ends a stream with [DONE] when any other request comes in, our
        # health check of its model list too: on a busy machine that cut the reply at once
        "--interrupt_requests", "False",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(url + "/v1/models", timeout=1).status_code == 200
        except httpx.TransportError:
            return process.poll() is not None

    try:
        assert wait_for(ready, 60) and process.poll() is None, "llama_cpp.server did not start"
        yield url
    finally:
        process.terminate()
        process.wait(15)
        log.close()


def test_llama_cpp_server_as_a_remote(front, llama_cpp_server):
    assert add_remote(front, "lcpp", [llama_cpp_server]).status_code == 200
    try:
        client = front.openai(timeout=60)
        chunks = list(
            client.chat.completions.create(
                model="lcpp/tiny", messages=HI, max_tokens=6, stream=True, temperature=0
            )
        )
        assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) >= 2, [
            (c.choices[0].delta.content, c.choices[0].finish_reason) for c in chunks if c.choices
        ]
        assert chunks[-1].choices[0].finish_reason in ("length", "stop")  # its template stops
        options = {"num_predict": 4, "temperature": 0}
        reply = ollama.Client(host=front.url).chat("lcpp/tiny", HI, options=options)
        assert reply.done and reply.message.content
    finally:
        remove_remote(front, "lcpp")


def test_a_loop_of_remotes_is_refused_not_followed(front, tmp_path):
    with front_daemon(tmp_path / "other") as other:
        assert add_remote(other, "a", [front.url], aliases={"loop": "loop"}).status_code == 200
        assert add_remote(front, "b", [other.url], aliases={"loop": "loop"}).status_code == 200
        try:
            r = _chat(front, "loop", timeout=60)
            assert r.status_code == 508, r.text
            assert "went round a loop of remotes" in r.json()["error"]["message"]
        finally:
            remove_remote(front, "b")


def test_a_replica_gone_quiet_mid_stream_is_checked_and_ejected(front, steady):
    raw = RawRemote("slow")  # one chunk, then silence with the request open
    urls = [raw.url, steady.url]  # nothing in flight: the first request goes to the first
    assert add_remote(front, "quiet", urls, timeout_seconds=60).status_code == 200
    body = {"model": "quiet/tiny", "messages": HI, "stream": True}
    try:
        url = front.url + "/v1/chat/completions"
        with httpx.stream("POST", url, json=body, timeout=60) as stream:
            lines = stream.iter_lines()
            assert next(line for line in lines if "Hello" in line)
            raw.frozen.set()  # and now it answers nothing at all, checks included
            assert wait_for(lambda: not _replicas(front, "quiet")[0]["healthy"], 40)
            assert _replicas(front, "quiet")[0]["in_flight"] == 1  # the stream is still open
            assert _chat(front, "quiet/tiny", timeout=30).status_code == 200  # the other one
    finally:
        remove_remote(front, "quiet")
        raw.close()
