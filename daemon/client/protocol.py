"""``DaemonClient``: the interface of ``daemon.client.Client``, as a ``typing.Protocol``.

Front ends annotate against it, so a stand-in can take the real client's place in tests: the
stand-ins in ``tests/`` implement it, and a test compares their methods' signatures with
``Client``'s so they cannot drift apart. Every answer is a ``daemon.api`` model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from localllm.daemon.api import (
    CatalogModel,
    ChatChunk,
    ChatCompletion,
    ChatCompletionChunk,
    EmbedResponse,
    GenerateChunk,
    HealthResponse,
    HubFile,
    HubRepo,
    Model,
    ModelSummary,
    NativeRerankResponse,
    PlanResponse,
    ProgressResponse,
    PromptCacheCleared,
    PromptCacheResponse,
    PruneResponse,
    PullRecordOut,
    RunningModel,
    ServerResponse,
    ShowResponse,
    SystemResponse,
    VerifyResponse,
)
from localllm.daemon.api.local_models import ImportMode, ImportProgress, LocalModelsResponse
from localllm.daemon.api.remotes import RemoteAddRequest, RemoteInfo, RemoteList
from localllm.daemon.client.transcripts import TranscriptEvent

__all__ = ["DaemonClient", "Progress"]

Progress = Callable[[int, int], None]  # an upload's (bytes done, bytes in all)


@runtime_checkable
class DaemonClient(Protocol):
    def close(self) -> None: ...

    # the daemon
    def health(self) -> HealthResponse: ...
    def version(self) -> str: ...
    def system(self) -> SystemResponse: ...
    def logs(self, lines: int = 200) -> str: ...
    def server(self) -> ServerResponse: ...
    def shutdown(self) -> None: ...

    # models
    def list_models(self) -> list[ModelSummary]: ...
    def list_openai_models(self) -> list[Model]: ...
    def running(self) -> list[RunningModel]: ...
    def show(self, name: str, verbose: bool = False) -> ShowResponse: ...
    def plan(self, name: str, options: Mapping[str, Any] | None = None) -> PlanResponse: ...
    def hub_plan(
        self,
        repo: str,
        file: str | None = None,
        quant: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> PlanResponse: ...
    def delete(self, name: str) -> None: ...
    def copy(self, source: str, destination: str) -> None: ...
    def unload(self, name: str) -> None: ...
    def prune(self) -> PruneResponse: ...
    def verify(self) -> VerifyResponse: ...
    def prompt_cache(self) -> PromptCacheResponse: ...
    def clear_prompt_cache(self) -> PromptCacheCleared: ...

    # audio
    def transcription(
        self,
        audio: Path,
        model: str,
        language: str | None = None,
        translate: bool = False,
        response_format: str = "text",
    ) -> Iterator[TranscriptEvent]: ...
    def speak(self, text: str, voice: str, format: str = "wav", speed: float = 1.0) -> bytes: ...

    # pulls
    def pull(self, name: str) -> Iterator[ProgressResponse]: ...
    def resume_pull(self, name: str) -> Iterator[ProgressResponse]: ...
    def pause_pull(self, name: str) -> None: ...
    def cancel_pull(self, name: str) -> None: ...
    def pulls(self) -> list[PullRecordOut]: ...

    # generating
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
    ) -> Iterator[ChatChunk]: ...
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
    ) -> Iterator[GenerateChunk]: ...
    def embed(self, model: str, input: str | Sequence[str]) -> EmbedResponse: ...
    def rerank(self, model: str, query: str, documents: Sequence[str]) -> NativeRerankResponse: ...
    def openai_chat(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> Iterator[ChatCompletionChunk]: ...
    def chat_once(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> ChatCompletion: ...

    # blobs and create
    def blob_exists(self, digest: str) -> bool: ...
    def upload_blob(
        self, path: Path | str, digest: str, on_progress: Progress | None = None
    ) -> None: ...
    def create(
        self, name: str, modelfile: str, files: Mapping[str, str], quantize: str | None = None
    ) -> Iterator[ProgressResponse]: ...
    def create_from_file(
        self, name: str, path: Path | str, quantize: str | None = None
    ) -> Iterator[ProgressResponse]: ...

    # models already on this computer
    def local_models(self) -> LocalModelsResponse: ...
    def import_file(
        self, path: Path | str, name: str | None = None, mode: ImportMode = "auto"
    ) -> Iterator[ImportProgress]: ...

    # the hub
    def hub_catalog(self) -> list[CatalogModel]: ...
    def hub_search(self, query: str, limit: int = 20) -> list[HubRepo]: ...
    def hub_files(self, repo: str) -> list[HubFile]: ...

    # remotes
    def remotes(self) -> RemoteList: ...
    def add_remote(self, request: RemoteAddRequest) -> RemoteInfo: ...
    def remove_remote(self, name: str) -> None: ...
