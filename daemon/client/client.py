"""The one HTTP client front ends use to talk to the daemon (httpx, synchronous).

Blocking by design: the CLI calls it directly and the GUI from worker threads. Every answer
comes back as the ``daemon.api`` model the server built it from (``ModelSummary``,
``ShowResponse``, ``ChatChunk``, ``ProgressResponse``...), so both ends share one type;
``openai_chat``/``chat_once`` speak OpenAI's. Streaming methods return lazy iterators: the
request goes out on the first ``next()``, and closing the iterator closes the connection.
Error responses, and ``{"error": ...}`` lines in the middle of a stream, come back as typed
exceptions (``ModelNotFound``, ``BadRequest``, ``ServerBusy``, ``Unauthorized``,
``Forbidden``, ``ServerError``, also for an answer that is not JSON; ``DaemonUnavailable``
when nothing answers, ``DaemonTimeout`` when the daemon took the request but did not answer
within ``timeout``). This class says which path each call takes, remotes (``/api/remotes``)
included; how a request goes out and its answer comes back is ``daemon.client.connection``'s.

``DaemonClient`` (``daemon.client.protocol``) is this class's interface, for front ends to
annotate against and test stand-ins to implement. To test without sockets pass
``transport=httpx.MockTransport(handler)``; httpx's ``ASGITransport`` is async-only and does
not fit this synchronous client, so to run it against a daemon app in-process, serve the app
with uvicorn on 127.0.0.1 in a thread (``tests/support/in_process.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from localllm.daemon.api import (
    CatalogModel,
    CatalogResponse,
    ChatChunk,
    ChatCompletion,
    ChatCompletionChunk,
    EmbedResponse,
    GenerateChunk,
    HealthResponse,
    HubFile,
    HubFilesResponse,
    HubRepo,
    HubSearchResponse,
    LogsResponse,
    Model,
    ModelList,
    ModelSummary,
    NativeRerankResponse,
    PlanResponse,
    ProgressResponse,
    PromptCacheCleared,
    PromptCacheResponse,
    PruneResponse,
    PullListResponse,
    PullRecordOut,
    RunningModel,
    RunningResponse,
    ServerResponse,
    ShowResponse,
    SystemResponse,
    TagsResponse,
    VerifyResponse,
    VersionResponse,
)
from localllm.daemon.api.local_models import ImportMode, ImportProgress, LocalModelsResponse
from localllm.daemon.api.remotes import RemoteAddRequest, RemoteInfo, RemoteList
from localllm.daemon.client.answers import Answer
from localllm.daemon.client.connection import Connection
from localllm.daemon.client.errors import ModelNotFound, RemoteNotFound
from localllm.daemon.client.protocol import Progress
from localllm.daemon.client.transcripts import TranscriptEvent, transcript_event

__all__ = ["DEFAULT_BASE_URL", "Client"]

DEFAULT_BASE_URL = "http://127.0.0.1:11435"
_CHUNK = 1 << 20


class Client:
    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float | None = 600.0,
        transport: httpx.BaseTransport | None = None,
        user_agent: str | None = None,
        admin_token: Callable[[], str | None] | None = None,
    ):
        """``admin_token`` reads the daemon's admin token when a call needs it (adding or
        removing a remote): only the front ends of the daemon's own user have one."""
        self._connection = Connection(
            base_url,
            api_key=api_key,
            timeout=timeout,
            transport=transport,
            user_agent=user_agent,
            admin_token=admin_token,
        )

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the daemon -------------------------------------------------------------------------
    def health(self) -> HealthResponse:
        return self._connection.answer(HealthResponse, "GET", "/health")

    def version(self) -> str:
        return self._connection.answer(VersionResponse, "GET", "/api/version").version

    def system(self) -> SystemResponse:
        return self._connection.answer(SystemResponse, "GET", "/api/system")

    def logs(self, lines: int = 200) -> str:
        return self._connection.answer(
            LogsResponse, "GET", "/api/logs", params={"lines": lines}
        ).text

    def server(self) -> ServerResponse:
        """How the daemon is served: host, port, lan (beyond loopback), api_key_set."""
        return self._connection.answer(ServerResponse, "GET", "/api/server")

    def shutdown(self) -> None:
        """Ask the daemon to exit gracefully (it accepts only from this machine)."""
        self._connection.request("POST", "/api/shutdown")

    # -- models -----------------------------------------------------------------------------
    def list_models(self) -> list[ModelSummary]:
        return self._connection.answer(TagsResponse, "GET", "/api/tags").models

    def list_openai_models(self) -> list[Model]:
        return self._connection.answer(ModelList, "GET", "/v1/models").data

    def running(self) -> list[RunningModel]:
        return self._connection.answer(RunningResponse, "GET", "/api/ps").models

    def show(self, name: str, verbose: bool = False) -> ShowResponse:
        body = {"model": name, "verbose": verbose}
        return self._connection.answer(ShowResponse, "POST", "/api/show", json=body)

    def plan(self, name: str, options: Mapping[str, Any] | None = None) -> PlanResponse:
        """What loading ``name`` with ``options`` (a chat's: ``num_ctx``, ``num_parallel``,
        ``kv_cache_type``...) would take in memory, part by part, and whether it fits; nothing
        loads."""
        body = {"model": name, "options": dict(options or {})}
        return self._connection.answer(PlanResponse, "POST", "/api/plan", json=body)

    def hub_plan(
        self,
        repo: str,
        file: str | None = None,
        quant: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> PlanResponse:
        """``plan`` for a quant on Hugging Face not downloaded yet (``file``, its first GGUF
        file, or ``quant`` as a pull names it): the daemon reads only its header."""
        body = _fields(repo=repo, file=file, quant=quant, options=dict(options or {}))
        return self._connection.answer(PlanResponse, "POST", "/api/plan", json=body)

    def delete(self, name: str) -> None:
        self._connection.request("DELETE", "/api/delete", json={"model": name})

    def copy(self, source: str, destination: str) -> None:
        self._connection.request(
            "POST", "/api/copy", json={"source": source, "destination": destination}
        )

    def unload(self, name: str) -> None:
        self._connection.request("POST", "/api/generate", json={"model": name, "keep_alive": 0})

    def prune(self) -> PruneResponse:
        return self._connection.answer(PruneResponse, "POST", "/api/prune")

    def verify(self) -> VerifyResponse:
        return self._connection.answer(VerifyResponse, "POST", "/api/verify")

    def prompt_cache(self) -> PromptCacheResponse:
        return self._connection.answer(PromptCacheResponse, "GET", "/api/prompt-cache")

    def clear_prompt_cache(self) -> PromptCacheCleared:
        return self._connection.answer(PromptCacheCleared, "DELETE", "/api/prompt-cache")

    # -- audio ------------------------------------------------------------------------------
    def transcription(
        self,
        audio: Path,
        model: str,
        language: str | None = None,
        translate: bool = False,
        response_format: str = "text",
    ) -> Iterator[TranscriptEvent]:
        """``audio`` (any format FFmpeg reads) as it is heard, segment by segment, then the
        whole transcript as ``response_format`` writes it: text, srt, vtt, json or
        verbose_json (with word times); ``translate``: in English."""
        fields = _audio_fields(model, language, translate) | {
            "response_format": response_format,
            "stream": "true",
        }
        if response_format == "verbose_json":
            fields["timestamp_granularities[]"] = "word"
        with audio.open("rb") as file:
            files = {"file": (audio.name, file)}
            for data in self._connection.form_events(_audio_path(translate), fields, files):
                if (event := transcript_event(data)) is not None:
                    yield event

    def speak(self, text: str, voice: str, format: str = "wav", speed: float = 1.0) -> bytes:
        """``text`` spoken by ``voice`` (a voice of the store) as ``format``: wav, mp3, flac..."""
        body = {"model": voice, "input": text, "response_format": format, "speed": speed}
        return self._connection.request("POST", "/v1/audio/speech", json=body).content

    # -- pulls ------------------------------------------------------------------------------
    def pull(self, name: str) -> Iterator[ProgressResponse]:
        """Progress events; closing the iterator stops watching, not the pull."""
        body = {"model": name, "stream": True}
        return self._connection.ndjson(ProgressResponse, "/api/pull", body)

    def resume_pull(self, name: str) -> Iterator[ProgressResponse]:
        body = {"model": name, "stream": True}
        return self._connection.ndjson(ProgressResponse, "/api/pull/resume", body)

    def pause_pull(self, name: str) -> None:
        self._connection.request("POST", "/api/pull/pause", json={"model": name})

    def cancel_pull(self, name: str) -> None:
        self._connection.request("POST", "/api/pull/cancel", json={"model": name})

    def pulls(self) -> list[PullRecordOut]:
        return self._connection.answer(PullListResponse, "GET", "/api/pulls").pulls

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
        body = _fields(
            model=model,
            messages=list(messages),
            options=options,
            keep_alive=keep_alive,
            format=format,
            tools=tools,
            think=think,
            truncate=truncate,
        )
        return self._generating(ChatChunk, "/api/chat", body, stream)

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
        body = _fields(
            model=model,
            prompt=prompt,
            options=options,
            keep_alive=keep_alive,
            format=format,
            system=system,
            think=think,
        )
        return self._generating(GenerateChunk, "/api/generate", body, stream)

    def embed(self, model: str, input: str | Sequence[str]) -> EmbedResponse:
        text = input if isinstance(input, str) else list(input)
        body = {"model": model, "input": text}
        return self._connection.answer(EmbedResponse, "POST", "/api/embed", json=body)

    def rerank(self, model: str, query: str, documents: Sequence[str]) -> NativeRerankResponse:
        """Every document's relevance to ``query`` (``/api/rerank``), best first."""
        body = {"model": model, "query": query, "documents": list(documents)}
        return self._connection.answer(NativeRerankResponse, "POST", "/api/rerank", json=body)

    def openai_chat(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> Iterator[ChatCompletionChunk]:
        """Stream an OpenAI chat completion chunk by chunk (``fields``: any request field)."""
        body = {**fields, "model": model, "messages": list(messages), "stream": True}
        return self._connection.sse(ChatCompletionChunk, "/v1/chat/completions", body)

    def chat_once(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> ChatCompletion:
        body = {**fields, "model": model, "messages": list(messages), "stream": False}
        return self._connection.answer(ChatCompletion, "POST", "/v1/chat/completions", json=body)

    # -- blobs and create -------------------------------------------------------------------
    def blob_exists(self, digest: str) -> bool:
        response = self._connection.request("HEAD", f"/api/blobs/{digest}", allowed=(404,))
        return response.status_code == 200

    def upload_blob(
        self, path: Path | str, digest: str, on_progress: Progress | None = None
    ) -> None:
        """Stream a file to the daemon, which keeps it only if it hashes to ``digest``."""
        path = Path(path)
        total = path.stat().st_size
        headers = {"Content-Length": str(total), "Content-Type": "application/octet-stream"}
        body = _file_chunks(path, total, on_progress)
        self._connection.request("POST", f"/api/blobs/{digest}", content=body, headers=headers)

    def create(
        self, name: str, modelfile: str, files: Mapping[str, str], quantize: str | None = None
    ) -> Iterator[ProgressResponse]:
        """Create ``name`` from Modelfile text; ``files`` maps each FROM/ADAPTER reference
        to the digest of a blob already uploaded."""
        body = _fields(model=name, modelfile=modelfile, files=dict(files), quantize=quantize)
        return self._connection.ndjson(ProgressResponse, "/api/create", {**body, "stream": True})

    def create_from_file(
        self, name: str, path: Path | str, quantize: str | None = None
    ) -> Iterator[ProgressResponse]:
        """Import one GGUF file as ``name``: hash it, upload it unless the daemon has it,
        create. Yields upload progress, then the create steps."""
        path = Path(path)
        total = path.stat().st_size
        yield ProgressResponse(status=f"hashing {path.name}", total=total, completed=0)
        digest = _sha256(path)
        if not self.blob_exists(digest):
            yield ProgressResponse(status=f"copying {path.name}", total=total, completed=0)
            self.upload_blob(path, digest)
            yield ProgressResponse(status=f"copying {path.name}", total=total, completed=total)
        reference = f"./{path.name}"
        yield from self.create(name, f"FROM {reference}\n", {reference: digest}, quantize)

    # -- the hub ----------------------------------------------------------------------------
    def hub_catalog(self) -> list[CatalogModel]:
        """The curated short names (``GET /api/hub/catalog``); needs no internet."""
        return self._connection.answer(CatalogResponse, "GET", "/api/hub/catalog").models

    def hub_search(self, query: str, limit: int = 20) -> list[HubRepo]:
        params = {"q": query, "limit": limit}
        return self._connection.answer(
            HubSearchResponse, "GET", "/api/hub/search", params=params
        ).models

    def hub_files(self, repo: str) -> list[HubFile]:
        params = {"repo": repo}
        return self._connection.answer(
            HubFilesResponse, "GET", "/api/hub/files", params=params
        ).files

    # -- models already on this computer ----------------------------------------------------
    def local_models(self) -> LocalModelsResponse:
        """GGUF models the daemon found in other apps' folders and the folders it was given."""
        return self._connection.answer(LocalModelsResponse, "GET", "/api/local-models")

    def import_file(
        self, path: Path | str, name: str | None = None, mode: ImportMode = "auto"
    ) -> Iterator[ImportProgress]:
        """Add a GGUF file on the daemon's machine: ``auto`` links it into the store where the
        file system allows and copies it otherwise; ``link`` never copies; ``copy`` always."""
        body: dict[str, Any] = {"path": str(Path(path).absolute()), "mode": mode, "stream": True}
        if name:
            body["name"] = name
        return self._connection.ndjson(ImportProgress, "/api/import", body)

    # -- remotes (engines elsewhere, their models served as ``NAME/<model id>``) ------------
    def remotes(self) -> RemoteList:
        """Every remote with its replicas' health, latency, in-flight requests and the models
        it last listed (the daemon's cached view; never waits on a slow remote)."""
        return self._connection.answer(RemoteList, "GET", "/api/remotes")

    def add_remote(self, request: RemoteAddRequest) -> RemoteInfo:
        """``BadRequest`` for a bad name or URL, ``Conflict`` for a name taken."""
        body = request.model_dump(mode="json", exclude_none=True)
        headers = self._connection.admin_headers()  # a change of where data goes
        return self._connection.answer(
            RemoteInfo, "POST", "/api/remotes", json=body, headers=headers
        )

    def remove_remote(self, name: str) -> None:
        """``RemoteNotFound`` for a name no remote has."""
        path = f"/api/remotes/{quote(name, safe='')}"
        try:
            self._connection.request("DELETE", path, headers=self._connection.admin_headers())
        except ModelNotFound as error:
            raise RemoteNotFound(error.message, error.status, error.code) from None

    # -- helpers ----------------------------------------------------------------------------
    def _generating(
        self, model: type[Answer], path: str, body: Mapping[str, Any], stream: bool
    ) -> Iterator[Answer]:
        """A native generation: a stream of chunks, or its one answer as a stream of one."""
        if stream:
            return self._connection.ndjson(model, path, {**body, "stream": True})
        body = {**body, "stream": False}
        return iter([self._connection.answer(model, "POST", path, json=body)])


def _fields(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


def _file_chunks(path: Path, total: int, on_progress: Progress | None) -> Iterator[bytes]:
    sent = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            yield chunk
            sent += len(chunk)
            if on_progress is not None:
                on_progress(sent, total)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _audio_path(translate: bool) -> str:
    return "/v1/audio/translations" if translate else "/v1/audio/transcriptions"


def _audio_fields(model: str, language: str | None, translate: bool) -> dict[str, str]:
    return {"model": model} | ({"language": language} if language and not translate else {})
