"""The desktop app's only door to the daemon.

Every call goes through ``daemon.client`` (the one HTTP client all front ends share) and comes
back as a frozen value from ``records``; every client error comes back as ``GatewayError`` with
a hint saying what to do next. Calls block, so callers run them in workers (``workers.py``),
never on the UI thread. When the client's shape changes, this is the one module to adjust.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from app.gui.records import (
    ChatDelta,
    ChatDone,
    GpuInfo,
    HubFile,
    HubRepo,
    InstalledModel,
    ModelDetails,
    PullProgress,
    PullStatus,
    RunningModel,
    ServerInfo,
    SystemInfo,
)
from daemon import client as _client

# The client's names today (Client, ClientError) and as planned (DaemonClient, DaemonError):
# once they settle, this becomes one plain import.
DaemonClient = getattr(_client, "DaemonClient", None) or _client.Client
DaemonError = getattr(_client, "DaemonError", None) or _client.ClientError
DaemonUnavailable = _client.DaemonUnavailable

__all__ = ["DEFAULT_BASE_URL", "ChatTurn", "Gateway", "GatewayError"]

DEFAULT_BASE_URL = "http://127.0.0.1:11435"
T = TypeVar("T")
_HINTS = {
    404: "Pull the model first (Discover, or the first-run page), or pick another model.",
    503: "The daemon is busy with other requests; try again in a moment.",
    507: "Unload other models on the Server page, or pick a smaller model or context.",
}


class GatewayError(Exception):
    """A failed daemon call, in words for the user, with what to do next."""

    def __init__(self, message: str, hint: str = "", *, unavailable: bool = False, status=None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.unavailable = unavailable
        self.status = status

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One message of a conversation as the daemon receives it (images base64-encoded)."""

    role: str
    content: str
    images: tuple[str, ...] = ()


def _translate(exc: Exception) -> GatewayError:
    if isinstance(exc, DaemonUnavailable):
        return GatewayError(
            "The localllm daemon is not answering.",
            "Restart it from the status bar, or run `localllm serve`.",
            unavailable=True,
        )
    if isinstance(exc, DaemonError):
        status = getattr(exc, "status", None)
        message = getattr(exc, "message", "") or str(exc)
        return GatewayError(message, _HINTS.get(status, ""), status=status)
    raise exc


def _call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (DaemonError, DaemonUnavailable) as exc:
        raise _translate(exc) from exc


def _stream(chunks: Iterable[dict], convert: Callable[[dict], T]) -> Iterator[T]:
    """Convert a client stream, closing it when the consumer stops early."""
    iterator = iter(chunks)
    try:
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                return
            except (DaemonError, DaemonUnavailable) as exc:
                raise _translate(exc) from exc
            if chunk.get("error"):
                raise GatewayError(str(chunk["error"]))
            yield convert(chunk)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", str(value)).replace("Z", "+00:00"))
    except ValueError:
        return None


def _installed(item: Mapping[str, Any]) -> InstalledModel:
    details = item.get("details") or {}
    return InstalledModel(
        name=item.get("name") or item.get("model", ""),
        size=int(item.get("size") or 0),
        modified_at=_time(item.get("modified_at")),
        digest=item.get("digest", ""),
        family=details.get("family", ""),
        parameter_size=details.get("parameter_size", ""),
        quantization=details.get("quantization_level", ""),
        format=details.get("format", ""),
    )


def _metadata_value(value: Any) -> str:
    if isinstance(value, list):
        head = ", ".join(map(str, value[:8]))
        return f"[{head}{', …' if len(value) > 8 else ''}] ({len(value)} items)"
    return str(value)


def _details(name: str, data: Mapping[str, Any]) -> ModelDetails:
    info = data.get("model_info") or {}
    context = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    return ModelDetails(
        name=name,
        modelfile=data.get("modelfile", ""),
        parameters=data.get("parameters", ""),
        template=data.get("template", ""),
        system=data.get("system", ""),
        license=data.get("license", ""),
        metadata=tuple(sorted((k, _metadata_value(v)) for k, v in info.items())),
        capabilities=frozenset(data.get("capabilities") or ()),
        context_length=int(context) if context else None,
    )


def _running(item: Mapping[str, Any]) -> RunningModel:
    return RunningModel(
        name=item.get("name") or item.get("model", ""),
        size=int(item.get("size") or 0),
        size_vram=int(item.get("size_vram") or 0),
        expires_at=_time(item.get("expires_at")),
        context_length=item.get("context_length"),
        processor=item.get("processor", ""),
    )


def _progress(name: str) -> Callable[[dict], PullProgress]:
    def convert(chunk: dict) -> PullProgress:
        return PullProgress(
            name=name,
            status=chunk.get("status", ""),
            digest=chunk.get("digest", ""),
            total=int(chunk.get("total") or 0),
            completed=int(chunk.get("completed") or 0),
        )

    return convert


def _chat_events(chunk: dict) -> tuple[ChatDelta | ChatDone, ...]:
    """A chunk is text, the end, or both (a final chunk may still carry text)."""
    content = (chunk.get("message") or {}).get("content", "")
    delta = (ChatDelta(content),) if content or not chunk.get("done") else ()
    if not chunk.get("done"):
        return delta
    fields = ChatDone.__dataclass_fields__
    return (*delta, ChatDone(**{k: v for k, v in chunk.items() if k in fields and v is not None}))


def _flatten(batches: Iterator[tuple[T, ...]]) -> Iterator[T]:
    try:
        for batch in batches:
            yield from batch
    finally:
        batches.close()


def _system(data: Mapping[str, Any]) -> SystemInfo:
    gpus = tuple(
        GpuInfo(g.get("name", "GPU"), int(g.get("vram_total") or 0), int(g.get("vram_free") or 0))
        for g in data.get("gpus") or ()
    )
    return SystemInfo(
        ram_total=int(data.get("ram_total") or 0),
        ram_available=int(data.get("ram_available") or 0),
        gpus=gpus,
        backend=data.get("backend", ""),
    )


class Gateway:
    """Blocking daemon calls that return ``records`` values and raise ``GatewayError``."""

    def __init__(self, client: Any, start: Callable[[], object] | None = None):
        self._client = client
        self._start = start if start is not None else getattr(client, "start_daemon", None)

    @classmethod
    def connect(cls, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None) -> Gateway:
        return cls(DaemonClient(base_url, api_key=api_key))

    def version(self) -> str:
        return _call(self._client.version)

    def start_daemon(self) -> None:
        if self._start is None:
            raise GatewayError("This build cannot start the daemon.", "Run `localllm serve`.")
        _call(self._start)

    def models(self) -> tuple[InstalledModel, ...]:
        return tuple(map(_installed, _call(self._client.list_models)))

    def details(self, name: str) -> ModelDetails:
        return _details(name, _call(lambda: self._client.show(name)))

    def running(self) -> tuple[RunningModel, ...]:
        return tuple(map(_running, _call(self._client.running)))

    def delete(self, name: str) -> None:
        _call(lambda: self._client.delete(name))

    def copy(self, source: str, destination: str) -> None:
        _call(lambda: self._client.copy(source, destination))

    def unload(self, name: str) -> None:
        _call(lambda: self._client.unload(name))

    def pull(self, name: str) -> Iterator[PullProgress]:
        return _stream(_call(lambda: self._client.pull(name)), _progress(name))

    def resume_pull(self, name: str) -> Iterator[PullProgress]:
        return _stream(_call(lambda: self._client.resume_pull(name)), _progress(name))

    def pause_pull(self, name: str) -> None:
        _call(lambda: self._client.pause_pull(name))

    def cancel_pull(self, name: str) -> None:
        _call(lambda: self._client.cancel_pull(name))

    def pulls(self) -> tuple[PullStatus, ...]:
        return tuple(
            PullStatus(
                name=p.get("name", ""),
                status=p.get("status", ""),
                total=int(p.get("total") or 0),
                completed=int(p.get("completed") or 0),
                state=p.get("state", "running"),
            )
            for p in _call(self._client.pulls)
        )

    def import_gguf(self, name: str, path: Path) -> Iterator[PullProgress]:
        return _stream(_call(lambda: self._client.create_from_file(name, path)), _progress(name))

    def chat(
        self,
        model: str,
        turns: Sequence[ChatTurn],
        options: Mapping[str, Any] | None = None,
        keep_alive: str | None = None,
    ) -> Iterator[ChatDelta | ChatDone]:
        # Images travel inside each message (the Ollama shape), so earlier pictures stay in context.
        messages = [
            {
                "role": t.role,
                "content": t.content,
                **({"images": list(t.images)} if t.images else {}),
            }
            for t in turns
        ]
        chunks = _call(
            lambda: self._client.chat(
                model, messages, options=options or None, keep_alive=keep_alive
            )
        )
        return _flatten(_stream(chunks, _chat_events))

    def hub_search(self, query: str, limit: int = 20) -> tuple[HubRepo, ...]:
        found = _call(lambda: self._client.hub_search(query, limit=limit))
        return tuple(
            HubRepo(
                r["repo"],
                int(r.get("downloads") or 0),
                int(r.get("likes") or 0),
                _time(r.get("updated")),
            )
            for r in found
        )

    def hub_files(self, repo: str) -> tuple[HubFile, ...]:
        return tuple(
            HubFile(f["file"], f.get("quant", ""), int(f.get("size") or 0), f["name_to_pull"])
            for f in _call(lambda: self._client.hub_files(repo))
        )

    def system(self) -> SystemInfo:
        return _system(_call(self._client.system))

    def server_info(self) -> ServerInfo:
        data = _call(self._client.server_info)
        return ServerInfo(
            data.get("host", "127.0.0.1"),
            int(data.get("port") or 11435),
            bool(data.get("lan")),
            bool(data.get("api_key_set")),
        )

    def set_lan(self, enabled: bool) -> ServerInfo:
        _call(lambda: self._client.set_lan(enabled))
        return self.server_info()

    def api_key(self) -> str:
        return _call(self._client.api_key)

    def logs(self, lines: int = 200) -> str:
        return _call(lambda: self._client.logs(lines=lines))
