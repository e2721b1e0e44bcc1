"""Fast checks of the native API's parts: the client's error mapping (no daemon: a mock
transport), the persistent pull list, and the translations to and from Ollama's shapes."""

from __future__ import annotations

import json

import httpx
import pytest

from localllm.daemon.api import ProgressResponse
from localllm.daemon.api.native_chat import ChatRequest, GenerateRequest
from localllm.daemon.client import (
    BadRequest,
    Client,
    DaemonUnavailable,
    Forbidden,
    ModelNotFound,
    ServerBusy,
    ServerError,
    Unauthorized,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.generation import GenerationStats
from localllm.daemon.inference.tool_calls import ToolCall
from localllm.daemon.models.pulls import PullRecord, PullRecords
from localllm.daemon.runners.worker import quantize
from localllm.daemon.scheduler.system_report import Gpu, gpu_left_unused, parse_gpus
from localllm.daemon.server.native.describe import listed_name, parameters_text
from localllm.daemon.server.native.translate import chat_job, generate_job, timings, tool_calls_out
from localllm.model_registry.names import parse_name


def mock_client(handler) -> Client:
    return Client("http://daemon", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, BadRequest),
        (401, Unauthorized),
        (403, Forbidden),
        (404, ModelNotFound),
        (409, BadRequest),
        (503, ServerBusy),
        (500, ServerError),
        (507, ServerError),
    ],
)
def test_error_statuses_become_typed_exceptions(status, kind):
    client = mock_client(lambda request: httpx.Response(status, json={"error": "nope"}))
    with pytest.raises(kind, match="nope") as caught:
        client.show("tiny")
    assert caught.value.status == status and caught.value.message == "nope"
    with pytest.raises(kind):
        list(client.pull("tiny"))


def test_an_error_line_inside_a_stream_raises():
    lines = b'{"status":"pulling manifest"}\n{"error":"the hub went away"}\n'
    client = mock_client(lambda request: httpx.Response(200, content=lines))
    events = client.pull("tiny")
    assert next(events) == ProgressResponse(status="pulling manifest")
    with pytest.raises(ServerError, match="the hub went away"):
        next(events)


def test_nothing_listening_is_daemon_unavailable():
    def refuse(request):
        raise httpx.ConnectError("connection refused")

    client = mock_client(refuse)
    with pytest.raises(DaemonUnavailable):
        client.version()
    with pytest.raises(DaemonUnavailable):
        list(client.chat("tiny", []))


def test_requests_have_ollama_shapes():
    seen: list[tuple[str, str, dict]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        seen.append((request.method, request.url.path, body))
        if request.method == "HEAD":
            return httpx.Response(404)
        reply = {"model": "tiny", "created_at": "2020-01-01T00:00:00Z", "message": {}, "done": True}
        return httpx.Response(200, json=reply)

    client = mock_client(handler)
    client.unload("tiny")
    client.delete("tiny")
    list(client.chat("tiny", [], options={"seed": 1}, keep_alive="5m", stream=False))
    assert client.blob_exists("sha256:" + "0" * 64) is False
    assert seen[0] == ("POST", "/api/generate", {"model": "tiny", "keep_alive": 0})
    assert seen[1] == ("DELETE", "/api/delete", {"model": "tiny"})
    assert seen[2][2] == {
        "model": "tiny",
        "messages": [],
        "options": {"seed": 1},
        "keep_alive": "5m",
        "stream": False,
    }


def test_the_pull_list_survives_and_marks_interrupted_pulls(tmp_path):
    path = tmp_path / "data" / "pulls.json"
    records = PullRecords(path)
    records.put("a", PullRecord("a", blobs={"sha256:x": [100, 40]}))
    records.put("b", PullRecord("b", state="failed", status="failed", error="boom"))
    records.put("c", PullRecord("c", state="queued", status="queued"))
    reloaded = PullRecords(path)
    a, b, c = reloaded.get("a"), reloaded.get("b"), reloaded.get("c")
    assert (a.state, a.interrupted, a.total, a.completed) == ("paused", True, 100, 40)
    assert (c.state, c.status, c.interrupted) == ("paused", "paused", True)  # never started
    assert (b.state, b.error) == ("failed", "boom")
    assert [p.name for p in path.parent.iterdir()] == ["pulls.json"]  # no temp file left
    path.write_text("{not json")
    assert PullRecords(path).all() == []


def test_generate_translation():
    job = generate_job(GenerateRequest(model="m", prompt="hi", system="sys", format="json"))
    assert job.messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
    ]
    assert job.json_schema == {"type": "object"}
    raw = generate_job(GenerateRequest(model="m", prompt="hi", raw=True, keep_alive="1m"))
    assert raw.prompt == "hi" and raw.raw and raw.keep_alive == 60
    filled = generate_job(GenerateRequest(model="m", prompt="hi", suffix="x", raw=True))
    assert (filled.prompt, filled.suffix, filled.templated) == ("hi", "x", False)
    with pytest.raises(BadRequestError, match="system cannot go with a suffix"):
        generate_job(GenerateRequest(model="m", prompt="hi", suffix="x", system="s"))


def test_chat_translation_keeps_tool_calls_as_objects():
    request = ChatRequest.model_validate(
        {
            "model": "m",
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}],
                },
                {"role": "tool", "content": "ok", "tool_name": "f"},
            ],
        }
    )
    job = chat_job(request)
    assert job.messages[0]["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}
    assert job.messages[1]["name"] == "f" and job.tool_choice.mode == "none"
    [call] = tool_calls_out([ToolCall("id", "f", '{"a": 1}')])
    assert call.model_dump() == {"function": {"name": "f", "arguments": {"a": 1}}}


@pytest.mark.parametrize("arguments", ["[1, 2]", '"x"', "3", "null", "not json"])
def test_chat_translation_refuses_arguments_that_are_no_object(arguments):
    """A call's arguments sent as a text must hold a JSON object, as Ollama's do: an array or
    a number once went on to the template as the call's arguments."""
    call = {"function": {"name": "f", "arguments": arguments}}
    request = ChatRequest.model_validate(
        {"model": "m", "messages": [{"role": "assistant", "tool_calls": [call]}]}
    )
    with pytest.raises(BadRequestError, match="must be a JSON object") as caught:
        chat_job(request)
    assert caught.value.param == "messages"


def test_timings_are_nanoseconds():
    usage = GenerationStats(3, 4, 0, 0.5, 0.25, 1.0, 0.6, 2.0)
    assert timings(usage) == {
        "total_duration": 2_000_000_000,
        "load_duration": 500_000_000,
        "prompt_eval_count": 3,
        "prompt_eval_duration": 250_000_000,
        "eval_count": 4,
        "eval_duration": 1_000_000_000,
    }


def test_show_text_forms():
    assert parameters_text({"stop": ["<|im_end|>", "x"], "temperature": 0.7}) == "\n".join(
        [f'{"stop":<30} "<|im_end|>"', f'{"stop":<30} "x"', f"{'temperature':<30} 0.7"]
    )
    assert listed_name(parse_name("tiny")) == "tiny:latest"
    assert listed_name(parse_name("hf.co/org/repo:Q8_0")) == "hf.co/org/repo:q8_0"


def test_gpu_lines_and_quantize_arguments():
    gpus = parse_gpus("NVIDIA H100, 81559, 80000\nnot a gpu line\n")
    assert [(g.name, g.vram_total >> 20, g.vram_free >> 20) for g in gpus] == [
        ("NVIDIA H100", 81559, 80000)
    ]
    assert quantize.main(["in.gguf", "out.gguf", "Q9_9"]) == 2


def test_a_gpu_next_to_a_cpu_only_build_is_said_with_the_fix():
    card = [Gpu("NVIDIA H200", 141 << 30, 140 << 30)]
    advice = gpu_left_unused("cpu", card, "Linux", "x86_64")
    assert advice.startswith("this llama.cpp build runs on the CPU only, so the NVIDIA H200 is")
    assert "python installers/llama_build.py --install" in advice
    assert "Apple GPU (Metal) is not used" in gpu_left_unused("cpu", [], "Darwin", "arm64")
    assert gpu_left_unused("cuda", card, "Linux", "x86_64") is None
    assert gpu_left_unused("metal", [], "Darwin", "arm64") is None
    assert gpu_left_unused("cpu", [], "Linux", "x86_64") is None
    assert gpu_left_unused("cpu", [], "Darwin", "x86_64") is None  # an Intel Mac: no Metal build
    assert quantize.main(["only-one"]) == 2
