"""The gateway turns the client's answers (``daemon.api`` models) into records, and its errors
into hints.

The client here is a stand-in for the corner cases a tiny test model never produces
(nanosecond timestamps, GPUs, long metadata arrays, a final chunk that carries text); the
``test_gui_e2e_*`` modules run every gateway call against a real daemon.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from localllm.app.gui.state.daemon_control import DaemonControl
from localllm.app.gui.state.gateway import ChatTurn, Gateway, GatewayError
from localllm.app.gui.state.records import ChatDelta, ChatDone, PullProgress
from localllm.daemon.api import (
    ChatChunk,
    GpuInfo,
    HubFile,
    ModelDetailsOut,
    ModelSummary,
    OllamaReply,
    ProgressResponse,
    SystemResponse,
)
from localllm.daemon.client import DaemonTimeout, DaemonUnavailable, ServerError
from localllm.daemon.settings import Settings
from tests.support.cli import SHOW, WHEN, FakeClient, running_model, signature_drift, text_chunk

QWEN = ModelSummary(
    name="qwen:0.5b",
    model="qwen:0.5b",
    modified_at="2026-04-01T10:20:30.123456789+02:00",
    size=491400032,
    digest="abc",
    details=ModelDetailsOut(
        format="gguf", family="qwen2", parameter_size="494M", quantization_level="Q4_K_M"
    ),
)


@dataclass
class CornerCases(FakeClient):
    """Answers like the daemon's /api/* endpoints, through the client's method names."""

    sent: dict = field(default_factory=dict)
    closed: bool = False

    def chat(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        keep_alive: str | float | None = None,
        format: str | Mapping[str, Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stream: bool = True,
        think: bool | str | None = None,
        truncate: bool | None = None,
    ) -> Iterator[ChatChunk]:
        self.sent = {"model": model, "messages": messages, "options": options}

        def stream_chunks():
            try:
                yield text_chunk("Hi")
                yield text_chunk("!")
                yield ChatChunk(
                    model=model,
                    created_at=WHEN,
                    message=OllamaReply(),
                    done=True,
                    done_reason="stop",
                    eval_count=2,
                    eval_duration=10**8,
                    total_duration=2 * 10**8,
                )
            finally:
                self.closed = True

        return stream_chunks()

    def pull(self, name: str) -> Iterator[ProgressResponse]:
        yield ProgressResponse(status="pulling manifest")
        yield ProgressResponse(status="pulling abc", digest="sha256:abc", total=10, completed=5)
        raise ServerError("disk full")  # what the client does with an error line

    def system(self) -> SystemResponse:
        gpu = GpuInfo(name="RTX", vram_total=8, vram_free=6)
        return SystemResponse(ram_total=16, ram_available=8, cpu_count=4, gpus=[gpu], backend="cpu")

    def hub_files(self, repo: str) -> list[HubFile]:
        return [
            HubFile(
                file="m-Q4_K_M.gguf",
                quant="Q4_K_M",
                size=5,
                shards=1,
                name_to_pull=f"hf.co/{repo}:Q4_K_M",
            )
        ]

    def version(self) -> str:
        raise DaemonUnavailable("connection refused")


@pytest.fixture
def client():
    show = SHOW.model_copy(
        update={
            "template": "{{ .Prompt }}",
            "license": "Apache",
            "parameters": "stop <|im_end|>",
            "model_info": {
                "qwen2.context_length": 32768,
                "general.architecture": "qwen2",
                "tokenizer.ggml.tokens": [str(i) for i in range(100)],
            },
            "capabilities": ["completion", "vision"],
        }
    )
    running = running_model(
        "qwen:0.5b",
        size=600,
        size_vram=0,
        expires_at="2026-04-01T10:25:00Z",
        context_length=4096,
        processor="100% CPU",
    )
    return CornerCases(models=[QWEN], show_info=show, loaded=[running], missing={"nope"})


def test_the_stand_in_has_the_clients_methods_and_signatures():
    assert signature_drift(CornerCases) == []


def test_installed_models_and_details_become_records(client):
    [model] = Gateway(client).models()
    assert (model.name, model.parameter_size, model.quantization, model.family) == (
        "qwen:0.5b",
        "494M",
        "Q4_K_M",
        "qwen2",
    )
    assert model.modified_at == datetime(2026, 4, 1, 8, 20, 30, 123456, tzinfo=UTC)
    details = Gateway(client).details("qwen:0.5b")
    assert details.context_length == 32768 and details.has_vision
    metadata = dict(details.metadata)
    assert metadata["general.architecture"] == "qwen2"
    assert metadata["tokenizer.ggml.tokens"].endswith("(100 items)")


def test_running_and_system(client):
    [running] = Gateway(client).running()
    assert running.processor == "100% CPU" and running.expires_at.tzinfo is not None
    system = Gateway(client).system()
    assert system.vram_total == 8 and system.gpus[0].name == "RTX"
    [f] = Gateway(client).hub_files("org/repo")
    assert f.name_to_pull == "hf.co/org/repo:Q4_K_M"


def test_chat_sends_images_inside_messages_and_streams_events(client):
    turns = [ChatTurn("system", "Be brief."), ChatTurn("user", "What is this?", ("aW1n",))]
    events = list(Gateway(client).chat("qwen:0.5b", turns, {"temperature": 0.2}))
    assert client.sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is this?", "images": ["aW1n"]},
    ]
    assert client.sent["options"] == {"temperature": 0.2}
    assert events[:2] == [ChatDelta("Hi"), ChatDelta("!")]
    assert events[2] == ChatDone(
        "stop", total_duration=2 * 10**8, eval_count=2, eval_duration=10**8
    )


def test_stopping_a_stream_early_closes_the_clients_stream(client):
    stream = Gateway(client).chat("m", [ChatTurn("user", "hi")])
    assert next(stream) == ChatDelta("Hi")
    stream.close()
    assert client.closed


def test_errors_arrive_as_gateway_errors_with_a_next_step(client):
    with pytest.raises(GatewayError) as not_found:
        Gateway(client).delete("nope")
    assert not_found.value.status == 404 and "Pull the model" in not_found.value.hint
    with pytest.raises(GatewayError) as down:
        Gateway(client).version()
    assert down.value.unavailable and "Restart" in down.value.hint
    stream = Gateway(client).pull("big")
    assert next(stream) == PullProgress("big", "pulling manifest")
    assert next(stream).completed == 5
    with pytest.raises(GatewayError, match="disk full") as failed:
        next(stream)
    assert "Resume it on the Downloads page" in failed.value.hint


class Busy(CornerCases):
    def version(self) -> str:
        raise DaemonTimeout("the daemon did not answer within 30 seconds")


def test_a_daemon_that_answers_late_is_busy_not_down():
    """A read timeout is a daemon that is there: no restart is offered, nothing marked down."""
    with pytest.raises(GatewayError) as late:
        Gateway(Busy(models=[QWEN])).version()
    assert not late.value.unavailable and "did not answer in time" in late.value.message
    assert "try again" in late.value.hint and "Restart" not in late.value.hint


def test_without_a_way_to_start_the_daemon_the_user_is_told_what_to_run():
    with pytest.raises(GatewayError, match="localllm serve"):
        Gateway(object()).start_daemon()


def test_a_final_chunk_that_still_carries_text_loses_none_of_it():
    last = ChatChunk(
        model="m", created_at=WHEN, message=OllamaReply(content="Bye"), done=True, eval_count=1
    )
    events = list(Gateway(FakeClient(chat_chunks=[last])).chat("m", [ChatTurn("user", "hi")]))
    assert events == [ChatDelta("Bye"), ChatDone(eval_count=1)]


# the data folders the Settings page lists


def test_the_data_folders_name_the_daemons_models_and_logs_folders(tmp_path: Path):
    settings = Settings(
        data_dir=tmp_path,
        config_dir=tmp_path,
        models_dir=tmp_path / "models",
        log_dir=tmp_path / "logs",
    )
    gateway = Gateway(None, DaemonControl(settings))
    assert gateway.data_folders(tmp_path / "chats") == (
        ("Models", tmp_path / "models"),
        ("Chats and documents", tmp_path / "chats"),
        ("Logs", tmp_path / "logs"),
    )


def test_without_a_daemon_control_only_the_chats_folder_is_listed(tmp_path: Path):
    gateway = Gateway(None)
    assert gateway.data_folders(tmp_path / "chats") == (
        ("Chats and documents", tmp_path / "chats"),
    )
