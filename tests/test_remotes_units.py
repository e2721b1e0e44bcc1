"""The remotes' pure parts without a daemon: the remotes file, names and URLs, replica choice
and backoff, and the translation of each engine's stream into deltas."""

from __future__ import annotations

import json
import stat
from types import SimpleNamespace

import pytest

from localllm.daemon.errors import BadRequestError, RemoteError
from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.inference.tool_calls import ToolCallDelta, ToolChoice
from localllm.daemon.remotes import RemoteConfig, ollama_wire, openai_wire
from localllm.daemon.remotes import replicas as replica_module
from localllm.daemon.remotes.config import RemotesFile, check_name, check_url
from localllm.daemon.remotes.replicas import ReplicaSet
from localllm.daemon.remotes.stream_state import StreamState


def test_the_remotes_file_is_private_and_round_trips(tmp_path):
    remotes = RemotesFile(tmp_path / "config")
    config = RemoteConfig("team", ("http://gpu1:8000",), aliases={"big": "meta/llama"})
    remotes.save([config])
    assert remotes.load() == [config]
    assert stat.S_IMODE(remotes.path.stat().st_mode) == 0o600
    assert [p.name for p in remotes.path.parent.iterdir()] == ["remotes.json"]  # no temp left


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("http://gpu1:8000", "http://gpu1:8000"),
        ("https://llm.example.org/v1/", "https://llm.example.org"),
        ("http://[::1]:9000/base/", "http://[::1]:9000/base"),
    ],
)
def test_urls_are_normalized(url, clean):
    assert check_url(url) == clean


@pytest.mark.parametrize(
    "url", ["gpu1:8000", "file:///etc/passwd", "http://a:b@gpu1", "http://gpu1:99999", "http://"]
)
def test_bad_urls_are_refused(url):
    with pytest.raises(BadRequestError):
        check_url(url)


@pytest.mark.parametrize("name", ["", "Team", "a/b", "-x", "x" * 33, "ü"])
def test_bad_names_are_refused(name):
    with pytest.raises(BadRequestError, match="lowercase letters"):
        check_name(name)


def test_least_outstanding_requests_and_doubling_backoff(monkeypatch):
    now = 1000.0  # the replicas' clock, stopped: a busy machine cannot end a backoff early
    monkeypatch.setattr(replica_module, "time", SimpleNamespace(monotonic=lambda: now))
    replicas = ReplicaSet(("http://a", "http://b", "http://c"), max_concurrency=2)
    a, b, c = replicas.replicas
    a.in_flight, b.in_flight, c.in_flight = 1, 0, 2
    assert replicas.pick(set()) is b
    assert replicas.pick({"http://b"}) is a  # c is at its limit
    ReplicaSet.failed(b, "boom")
    assert b.ejected_until == now + 1.0
    ReplicaSet.failed(b, "boom")
    assert b.ejected_until == now + 2.0  # 1 s, then 2 s
    assert replicas.pick(set()) is a
    now += 2.0
    assert replicas.pick(set()) is b  # its backoff is over
    ReplicaSet.failed(b, "boom")
    assert replicas.pick(set()) is a
    ReplicaSet.checked(b, 3.0, None)  # an active check that passes lifts the ejection
    assert replicas.pick(set()) is b and b.failures == 0


def test_a_lone_ejected_replica_is_still_tried_but_an_unhealthy_one_is_not():
    replicas = ReplicaSet(("http://a",), max_concurrency=1)
    ReplicaSet.failed(replicas.replicas[0], "blip")
    assert replicas.pick(set()) is replicas.replicas[0]
    ReplicaSet.checked(replicas.replicas[0], None, "unreachable")
    assert replicas.pick(set()) is None and not replicas.busy(set())


def _sse(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload).encode()


def test_openai_chunks_become_deltas_with_tool_calls_split():
    state = StreamState("team")
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a":'}}
    line = _sse({"choices": [{"delta": {"reasoning_content": "hm", "tool_calls": [call]}}]})
    deltas = openai_wire.read_chunk(line, state)
    assert deltas[0].thinking == "hm"
    assert deltas[1].tool_calls == (ToolCallDelta(0, id="c1", name="f"),)
    assert deltas[2].tool_calls == (ToolCallDelta(0, arguments='{"a":'),)
    more = {"index": 0, "function": {"arguments": "1}"}}
    end = {"choices": [{"delta": {"tool_calls": [more]}, "finish_reason": "stop"}]}
    openai_wire.read_chunk(_sse(end), state)
    openai_wire.read_chunk(_sse({"choices": [], "usage": {"prompt_tokens": 7}}), state)
    openai_wire.read_chunk(b"data: [DONE]", state)
    assert state.done and state.finish_reason() == "tool_calls" and state.prompt_tokens == 7
    assert state.tool_calls()[0].arguments == '{"a":1}'


@pytest.mark.parametrize(
    "line", [b"data: {oops", b"data: [1]", b'data: {"error": {"message": "x"}}']
)
def test_bad_openai_events_are_remote_errors(line):
    with pytest.raises(RemoteError, match="remote 'team'"):
        openai_wire.read_chunk(line, StreamState("team"))


def test_a_job_becomes_a_chat_completions_request():
    content = [{"type": "image", "index": 0}, {"type": "text", "text": "what?"}]
    job = GenerationJob(
        model="team/m",
        messages=[{"role": "user", "content": content}],
        images=[b"\x89PNG...."],
        options={"temperature": 0.5, "num_predict": 9, "stop": ["\n"], "top_k": 3},
        tools=[{"type": "function", "function": {"name": "f"}}],
        tool_choice=ToolChoice("function", "f"),
        json_schema={"type": "object"},
        think="high",
    )  # fmt: skip
    body = openai_wire.chat_body(job, "m")
    image = body["messages"][0]["content"][0]["image_url"]["url"]
    assert image.startswith("data:image/png;base64,")
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.5, 9, ["\n"])
    assert "top_k" not in body and body["stream_options"] == {"include_usage": True}
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}
    assert body["reasoning_effort"] == "high"


def test_raw_prompts_cannot_go_to_a_remote():
    with pytest.raises(BadRequestError, match="raw prompts"):
        openai_wire.chat_body(GenerationJob(model="t/m", prompt="x", raw=True), "m")


def test_ollama_lines_become_deltas():
    state = StreamState("o")
    calls = [{"function": {"name": "f", "arguments": {"a": 1}}}]
    line = json.dumps({"message": {"content": "", "tool_calls": calls}, "done": False})
    deltas = ollama_wire.read_line(line.encode(), state)
    assert deltas[0].tool_calls[0].name == "f" and deltas[1].tool_calls[0].arguments == '{"a": 1}'
    done = {"message": {"content": "!"}, "done": True, "done_reason": "stop", "eval_count": 4}
    assert ollama_wire.read_line(json.dumps(done).encode(), state)[0].text == "!"
    assert state.done and state.completion_tokens == 4 and state.finish_reason() == "tool_calls"
