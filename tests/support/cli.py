"""A stand-in for ``daemon.client.Client`` and canned daemon answers, for the CLI and GUI tests.

``FakeClient`` implements ``daemon.client.DaemonClient``: every method, with ``Client``'s
signatures (``signature_drift`` lists any difference; ``tests/test_client_protocol.py`` and the
GUI's gateway tests check it), answering with the same ``daemon.api`` models the real client
returns. It records each call, so command tests check output and flows without a daemon.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localllm.daemon.api import (
    CatalogModel,
    ChatChoice,
    ChatChunk,
    ChatChunkChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatDelta,
    ChatResponseMessage,
    EmbedResponse,
    GenerateChunk,
    HealthResponse,
    HubFile,
    HubRepo,
    Model,
    ModelDetailsOut,
    ModelSummary,
    NativeRerankResponse,
    OllamaReply,
    PlanDevice,
    PlanPartOut,
    PlanResponse,
    PlanSettingsOut,
    ProgressResponse,
    PromptCacheCleared,
    PromptCacheResponse,
    PruneResponse,
    PullRecordOut,
    RerankResult,
    RunningModel,
    ServerResponse,
    ShowResponse,
    SystemResponse,
    VerifyResponse,
)
from localllm.daemon.api.local_models import (
    ImportMode,
    ImportProgress,
    LocalModelOut,
    LocalModelsResponse,
)
from localllm.daemon.client import DaemonClient, ModelNotFound
from localllm.daemon.client.protocol import Progress
from localllm.daemon.client.transcripts import Heard, TranscriptEnd, TranscriptEvent
from tests.support.fake_remotes import FakeRemotes

WHEN = "2020-01-01T00:00:00Z"

MODEL = ModelSummary(
    name="tiny:latest",
    model="tiny:latest",
    modified_at=WHEN,
    size=4_700_000_000,
    digest="sha256:" + "ab" * 32,
    details=ModelDetailsOut(format="gguf", family="llama", parameter_size="8.0B"),
)

SHOW = ShowResponse(
    modelfile="FROM tiny\nPARAMETER temperature 0.7\n",
    parameters='temperature                    0.7\nstop                           "<|im_end|>"',
    template="{{ .Prompt }}",
    system="You are tiny.",
    license="MIT License\nCopyright\nline three",
    details=ModelDetailsOut(family="llama", parameter_size="8.0B", quantization_level="Q4_K_M"),
    model_info={
        "general.architecture": "llama",
        "general.parameter_count": 8_030_261_248,
        "llama.context_length": 131072,
        "llama.embedding_length": 4096,
    },
    capabilities=["completion", "tools"],
    modified_at=WHEN,
)


MIB = 1 << 20

PLAN = PlanResponse(
    model="tiny:latest",
    file_size=253 * MIB,
    settings=PlanSettingsOut(
        context_length=4096,
        context_reason="the largest context that fits: 4,096 tokens (4 slots, 6.4 GiB free)",
        num_parallel=4,
        parallel_reason="the default of 4",
        kv_cache_type="f16",
        flash_attention=True,
        gpu_layers=0,
        total_layers=19,
        placement_reason="no GPU found",
    ),
    parts=[
        PlanPartOut(kind="weights", device="CPU", bytes=248 * MIB, text="weights, mapped"),
        PlanPartOut(kind="kv", device="CPU", bytes=96 * MIB, text="K and V, 4,096 cells x 4"),
        PlanPartOut(kind="compute", device="CPU", bytes=514 * MIB, text="graph", measured=True),
        PlanPartOut(kind="host cache", device="CPU", bytes=1024 * MIB, text="prompts", later=True),
    ],
    devices=[PlanDevice(device="CPU", bytes=858 * MIB, later_bytes=1024 * MIB, free=6554 * MIB)],
    total=858 * MIB,
    fits=True,
    fit_reason="it needs 858 MiB of RAM, 6.4 GiB free",
    measured=True,
)


# ``localllm ps``'s header, split on spaces
PS_HEADER = ["NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "SLOTS", "KV", "CACHE", "UNTIL"]


def running_model(name: str, **fields: Any) -> RunningModel:
    """``/api/ps``'s entry for ``name``; ``fields`` replace the defaults (a small CPU model)."""
    defaults: dict[str, Any] = {
        "model": name,
        "size": 1000,
        "digest": "",
        "details": ModelDetailsOut(),
        "expires_at": "",
        "size_vram": 0,
        "context_length": 0,
        "processor": "",
        "active_requests": 0,
    }
    return RunningModel(name=name, **{**defaults, **fields})


def text_chunk(text: str, model: str = "tiny:latest") -> ChatChunk:
    """A ``/api/chat`` stream chunk carrying ``text``, not the last."""
    return ChatChunk(model=model, created_at=WHEN, message=OllamaReply(content=text))


def thought_chunk(text: str, model: str = "tiny:latest") -> ChatChunk:
    """A thinking model's ``/api/chat`` chunk: a piece of its thinking, no content."""
    return ChatChunk(model=model, created_at=WHEN, message=OllamaReply(thinking=text))


def thinking_chunks(thoughts: Sequence[str], *pieces: str) -> list[ChatChunk]:
    """A thinking model's stream: the ``thoughts`` first, then ``answer_chunks(*pieces)``."""
    return [*map(thought_chunk, thoughts), *answer_chunks(*pieces)]


def answer_chunks(*pieces: str) -> list[ChatChunk]:
    """``/api/chat`` stream chunks for an answer made of ``pieces``, with a final timing chunk."""
    final = ChatChunk(
        model="tiny:latest",
        created_at=WHEN,
        message=OllamaReply(content=""),
        done=True,
        done_reason="stop",
        total_duration=1_500_000_000,
        load_duration=20_000_000,
        prompt_eval_count=10,
        prompt_eval_duration=100_000_000,
        eval_count=50,
        eval_duration=1_000_000_000,
    )
    return [*map(text_chunk, pieces), final]


@dataclass
class FakeClient(FakeRemotes):
    models: list[ModelSummary] = field(default_factory=lambda: [MODEL.model_copy()])
    loaded: list[RunningModel] = field(default_factory=list)
    show_info: ShowResponse = field(default_factory=lambda: SHOW.model_copy())
    pull_events: list[ProgressResponse] = field(default_factory=list)
    chat_chunks: list[ChatChunk] = field(default_factory=list)
    blobs: set[str] = field(default_factory=set)
    found: list[LocalModelOut] = field(default_factory=list)  # models "already on disk"
    create_events: list[ProgressResponse] = field(
        default_factory=lambda: [ProgressResponse(status="success")]
    )
    calls: list[tuple] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)  # names show() reports as not found
    plan_info: PlanResponse = field(default_factory=lambda: PLAN.model_copy(deep=True))

    def close(self) -> None:
        pass

    # -- the daemon -------------------------------------------------------------------------
    def health(self) -> HealthResponse:
        loaded = len(self.loaded)
        return HealthResponse(
            status="ok", version=self.version(), models_loaded=loaded, requests_in_flight=0
        )

    def version(self) -> str:
        return "0.0.0-fake"

    def system(self) -> SystemResponse:
        memory = {"ram_total": 16_000_000_000, "ram_available": 8_000_000_000}
        return SystemResponse(**memory, cpu_count=8, gpus=[], backend="cpu")

    def logs(self, lines: int = 200) -> str:
        return ""

    def server(self) -> ServerResponse:
        return ServerResponse(host="127.0.0.1", port=11435, lan=False, api_key_set=False)

    def shutdown(self) -> None:
        self.calls.append(("shutdown",))

    # -- models -----------------------------------------------------------------------------
    def list_models(self) -> list[ModelSummary]:
        self.calls.append(("list_models",))
        return self.models

    def list_openai_models(self) -> list[Model]:
        return [Model(id=m.name, created=0, owned_by="library") for m in self.models]

    def running(self) -> list[RunningModel]:
        self.calls.append(("running",))
        return self.loaded

    def show(self, name: str, verbose: bool = False) -> ShowResponse:
        self.calls.append(("show", name))
        if name in self.missing:
            raise ModelNotFound(f"model '{name}' not found", 404)
        return self.show_info

    def plan(self, name: str, options: Mapping[str, Any] | None = None) -> PlanResponse:
        self.calls.append(("plan", name, dict(options or {})))
        if name in self.missing:
            raise ModelNotFound(f"model '{name}' not found", 404)
        return self.plan_info

    def hub_plan(
        self,
        repo: str,
        file: str | None = None,
        quant: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> PlanResponse:
        self.calls.append(("hub_plan", repo, file, quant, dict(options or {})))
        return self.plan_info.model_copy(update={"source": "hub"})

    def delete(self, name: str) -> None:
        self.calls.append(("delete", name))
        if name in self.missing:
            raise ModelNotFound(f"model '{name}' not found", 404)

    def copy(self, source: str, destination: str) -> None:
        self.calls.append(("copy", source, destination))

    def unload(self, name: str) -> None:
        self.calls.append(("unload", name))

    def prune(self) -> PruneResponse:
        return PruneResponse(removed=["sha256:" + c * 64 for c in "123"], freed=1_500_000)

    def prompt_cache(self) -> PromptCacheResponse:
        return PromptCacheResponse(files=2, bytes=3_000_000, limit_bytes=20 << 30)

    def clear_prompt_cache(self) -> PromptCacheCleared:
        return PromptCacheCleared(files=2, freed=3_000_000)

    def transcription(
        self,
        audio: Path,
        model: str,
        language: str | None = None,
        translate: bool = False,
        response_format: str = "text",
    ) -> Iterator[TranscriptEvent]:
        self.calls.append(("transcription", audio.name, model, response_format))
        yield Heard(f"what {audio.name} says", 0.0, 1.0, 1.0)
        yield TranscriptEnd(f"what {audio.name} says", f"what {audio.name} says\n")

    def speak(self, text: str, voice: str, format: str = "wav", speed: float = 1.0) -> bytes:
        self.calls.append(("speak", text, voice, format, speed))
        return b"RIFF" + b"\xff\xff\xff\xff" + b"WAVE" + b"fake speech"

    def verify(self) -> VerifyResponse:
        return VerifyResponse(ok=True, checked=4, corrupt=[], missing=[], unreadable_manifests=[])

    # -- pulls ------------------------------------------------------------------------------
    def pull(self, name: str) -> Iterator[ProgressResponse]:
        self.calls.append(("pull", name))
        self.missing.discard(name)
        yield from self.pull_events

    def resume_pull(self, name: str) -> Iterator[ProgressResponse]:
        self.calls.append(("resume_pull", name))
        yield from self.pull_events

    def pause_pull(self, name: str) -> None:
        self.calls.append(("pause_pull", name))

    def cancel_pull(self, name: str) -> None:
        self.calls.append(("cancel_pull", name))

    def pulls(self) -> list[PullRecordOut]:
        return [
            PullRecordOut(
                name="big:latest", state="paused", status="paused", total=200, completed=50
            )
        ]

    # -- generating -------------------------------------------------------------------------
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
        sent: dict[str, Any] = {"options": options, "keep_alive": keep_alive, "format": format}
        sent |= {"tools": tools} if tools is not None else {}
        sent |= {"think": think} if think is not None else {}
        sent |= {"stream": stream} if not stream else {}
        sent |= {"truncate": truncate} if truncate is not None else {}
        self.calls.append(("chat", model, [dict(m) for m in messages], sent))
        yield from self.chat_chunks

    def generate(
        self,
        model: str,
        prompt: str,
        options: Mapping[str, Any] | None = None,
        keep_alive: str | float | None = None,
        format: str | Mapping[str, Any] | None = None,
        system: str | None = None,
        stream: bool = True,
        think: bool | str | None = None,
    ) -> Iterator[GenerateChunk]:
        self.calls.append(("generate", model, prompt))
        for chunk in self.chat_chunks:
            fields = chunk.model_dump(exclude={"message"})
            reply = chunk.message
            yield GenerateChunk(**fields, response=reply.content, thinking=reply.thinking)

    def rerank(self, model: str, query: str, documents: Sequence[str]) -> NativeRerankResponse:
        """Scores the documents by how many of the query's words each holds."""
        words = set(query.lower().split())
        scores = [float(len(words & set(d.lower().split()))) for d in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        results = [RerankResult(index=i, relevance_score=scores[i]) for i in order]
        return NativeRerankResponse(
            model=model, results=results, total_duration=0, load_duration=0, prompt_eval_count=0
        )

    def embed(self, model: str, input: str | Sequence[str]) -> EmbedResponse:
        texts = [input] if isinstance(input, str) else list(input)
        return EmbedResponse(
            model=model,
            embeddings=[[1.0, 0.0] for _ in texts],
            total_duration=0,
            load_duration=0,
            prompt_eval_count=len(texts),
        )

    def openai_chat(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> Iterator[ChatCompletionChunk]:
        for chunk in self.chat(model, messages):
            delta = ChatDelta(content=chunk.message.content or None)
            finish = chunk.done_reason if chunk.done else None
            choice = ChatChunkChoice(delta=delta, finish_reason=finish)
            yield ChatCompletionChunk(id="chatcmpl-fake", created=0, model=model, choices=[choice])

    def chat_once(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> ChatCompletion:
        text = "".join(chunk.message.content for chunk in self.chat(model, messages))
        choice = ChatChoice(message=ChatResponseMessage(content=text), finish_reason="stop")
        return ChatCompletion(id="chatcmpl-fake", created=0, model=model, choices=[choice])

    # -- blobs and create -------------------------------------------------------------------
    def blob_exists(self, digest: str) -> bool:
        self.calls.append(("blob_exists", digest))
        return digest in self.blobs

    def upload_blob(
        self, path: Path | str, digest: str, on_progress: Progress | None = None
    ) -> None:
        self.calls.append(("upload_blob", Path(path).name, digest))
        if on_progress:
            size = Path(path).stat().st_size
            on_progress(size, size)
        self.blobs.add(digest)

    def create(
        self, name: str, modelfile: str, files: Mapping[str, str], quantize: str | None = None
    ) -> Iterator[ProgressResponse]:
        self.calls.append(("create", name, modelfile, dict(files), quantize))
        yield from self.create_events

    def create_from_file(
        self, name: str, path: Path | str, quantize: str | None = None
    ) -> Iterator[ProgressResponse]:
        self.calls.append(("create_from_file", name, Path(path).name, quantize))
        yield from self.create_events

    # -- models already on this computer --------------------------------------------------
    def local_models(self) -> LocalModelsResponse:
        self.calls.append(("local_models",))
        return LocalModelsResponse(models=list(self.found), truncated=False)

    def import_file(
        self, path: Path | str, name: str | None = None, mode: ImportMode = "auto"
    ) -> Iterator[ImportProgress]:
        self.calls.append(("import_file", Path(path).name, name, mode))
        yield ImportProgress(status="success", model=name or Path(path).stem, copied_bytes=0)

    # -- the hub ----------------------------------------------------------------------------
    def hub_catalog(self) -> list[CatalogModel]:
        return [
            CatalogModel(
                name="tiny:1m",
                repo="org/tiny-GGUF",
                quant="Q4_K_M",
                kind="chat",
                parameter_size="1M",
                size=1000,
                description="A tiny chat model.",
            )
        ]

    def hub_search(self, query: str, limit: int = 20) -> list[HubRepo]:
        return [HubRepo(repo=f"org/{query or 'model'}-GGUF")][:limit]

    def hub_files(self, repo: str) -> list[HubFile]:
        return [
            HubFile(
                file="model-Q4_K_M.gguf",
                quant="Q4_K_M",
                size=1000,
                shards=1,
                name_to_pull=f"hf.co/{repo}:Q4_K_M",
                recommended=True,
            )
        ]


def signature_drift(fake: type) -> list[str]:
    """How ``fake``'s methods differ from ``DaemonClient``'s (and so ``Client``'s): a method
    missing or extra, or one whose parameters, defaults or annotations differ. Empty when
    they match."""
    wanted, found = _public_methods(DaemonClient), _public_methods(fake)
    drift = [f"{fake.__name__} lacks {name}" for name in sorted(wanted.keys() - found.keys())]
    drift += [f"{fake.__name__}.{name} is not a client method" for name in found.keys() - wanted]
    for name in sorted(wanted.keys() & found.keys()):
        if found[name] != wanted[name]:
            drift.append(f"{fake.__name__}.{name}{found[name]} != {name}{wanted[name]}")
    return drift


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    """The signature of each public method ``cls`` has (its own or inherited, not object's)."""
    return {
        name: inspect.signature(member, eval_str=True)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }
