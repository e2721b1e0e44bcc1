"""The desktop app's only door to the daemon.

Every call goes through ``daemon.client`` (the one HTTP client all front ends share; any
``DaemonClient`` will do, which is how tests stand one in) and its ``daemon.api`` answer comes
back as a frozen value from ``records`` (converted in ``wire.py``); every client error comes
back as ``GatewayError`` with a hint saying what to do next. Calls block, so callers run them in
workers (``workers.py``), never on the UI thread.

Two clients share the address: one with a short timeout for the quick calls (a daemon that
accepts connections but never answers is reported as down within seconds) and one with a long
timeout for what streams or may take a while (chat, pulls, imports, the hub). They are made on
first use, in a worker, because finding the saved API key may ask the system keyring.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from app.gui.state import wire
from app.gui.state.daemon_control import DaemonControl, lan_address
from app.gui.state.records import (
    ChatDelta,
    ChatDone,
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
from daemon.api import ServerResponse
from daemon.client import Client, ClientError, DaemonClient, DaemonUnavailable
from daemon.client.launcher import DaemonStartError

__all__ = ["DEFAULT_BASE_URL", "ChatTurn", "Gateway", "GatewayError"]

DEFAULT_BASE_URL = "http://127.0.0.1:11435"
QUICK_TIMEOUT = 10.0
LONG_TIMEOUT = 600.0
T = TypeVar("T")
Chunk = TypeVar("Chunk")
Hints = Mapping[int, str]
_STREAM_ERROR = -1  # the key for an error line in the middle of a stream (no HTTP status)

_HINTS: Hints = {
    401: "The daemon wants an API key: turn the local-network switch off and on again on the "
    "Server page, or set LOCALLLM_API_KEY.",
    404: "Pull the model first (Discover, or the first-run page), or pick another model.",
    502: "The daemon could not reach Hugging Face: check the internet connection and retry. "
    "Offline? Import a GGUF file you already have (Models, Import GGUF).",
    503: "The daemon is busy with other requests; try again in a moment.",
    507: "Unload other models on the Server page, or pick a smaller model or context.",
}
_PULL_HINTS: Hints = {
    **_HINTS,
    404: "No model by that name: search for it on the Discover page.",
    400: "Check the name: hf.co/<org>/<repo>:<quant>, or a name from the first-run page.",
    _STREAM_ERROR: "Resume it on the Downloads page once that is fixed; "
    "what was downloaded is kept.",
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
    thinking: str = ""  # a reply's reasoning, for templates that keep it


def _translate(exc: ClientError, hints: Hints) -> GatewayError:
    if isinstance(exc, DaemonStartError):
        tail = next((line for line in reversed(exc.details) if line.strip()), "")
        return GatewayError(exc.message, tail, unavailable=True)
    if isinstance(exc, DaemonUnavailable):
        return GatewayError(
            "The localllm daemon is not answering.",
            "Restart it from the status bar, or run `localllm serve`.",
            unavailable=True,
        )
    hint = hints.get(exc.status if exc.status is not None else _STREAM_ERROR, "")
    if exc.code == "download_failed":
        hint = _HINTS[502]
    return GatewayError(exc.message or str(exc), hint, status=exc.status)


def _call(fn: Callable[[], T], hints: Hints = _HINTS) -> T:
    try:
        return fn()
    except ClientError as exc:
        raise _translate(exc, hints) from exc


def _stream(
    chunks: Callable[[], Iterable[Chunk]], convert: Callable[[Chunk], T], hints: Hints = _HINTS
) -> Iterator[T]:
    """Convert a client stream lazily (the request goes out on the first ``next()``), closing
    it when the consumer stops early."""
    iterator = iter(_call(chunks, hints))
    try:
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                return
            except ClientError as exc:
                raise _translate(exc, hints) from exc
            yield convert(chunk)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def _flatten(batches: Iterator[tuple[T, ...]]) -> Iterator[T]:
    try:
        for batch in batches:
            yield from batch
    finally:
        batches.close()


class Gateway:
    """Blocking daemon calls that return ``records`` values and raise ``GatewayError``.

    ``client`` and ``quick`` are ready-made clients (tests); ``connect`` makes them lazily.
    """

    def __init__(
        self,
        client: DaemonClient | None = None,
        control: DaemonControl | None = None,
        quick: DaemonClient | None = None,
        *,
        make_client: Callable[[str | None, float], DaemonClient] | None = None,
        quick_timeout: float = QUICK_TIMEOUT,
    ):
        self.control = control
        self._client, self._quick = client, quick or client
        self._make = make_client
        self._quick_timeout = quick_timeout
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, control: DaemonControl, *, quick_timeout: float = QUICK_TIMEOUT) -> Gateway:
        url = control.url

        def make(key: str | None, timeout: float) -> DaemonClient:
            return Client(url, api_key=key, timeout=timeout)

        return cls(None, control, make_client=make, quick_timeout=quick_timeout)

    # the two clients

    def _long(self) -> DaemonClient:
        return self._clients()[0]

    def _short(self) -> DaemonClient:
        return self._clients()[1]

    def _clients(self) -> tuple[DaemonClient, DaemonClient]:
        with self._lock:
            if self._client is None:
                key = self.control.stored_key() if self.control is not None else None
                self._use_key(key)
            if self._client is None or self._quick is None:
                raise GatewayError("This window has no way to reach the daemon.")
            return self._client, self._quick

    def _use_key(self, key: str | None) -> None:
        """New clients with ``key``; calls already out finish on the old ones."""
        if self._make is None:
            return
        self._client = self._make(key, LONG_TIMEOUT)
        self._quick = self._make(key, self._quick_timeout)

    # the daemon itself

    def version(self) -> str:
        return _call(lambda: self._short().version())

    def start_daemon(self) -> None:
        if self.control is None:
            raise GatewayError("This window cannot start the daemon.", "Run `localllm serve`.")
        _call(self.control.start)

    def server_info(self) -> ServerInfo:
        data = _call(lambda: self._short().server())
        return wire.server_info(data, self._lan_url(data))

    def set_lan(self, enabled: bool) -> ServerInfo:
        """Restart the daemon for (or off) the local network; slow (seconds)."""
        if self.control is None:
            raise GatewayError("This window did not start the daemon and cannot restart it.")
        key = _call(lambda: self.control.switch(enabled, self._stop_daemon))
        with self._lock:
            self._use_key(key)
        return self.server_info()

    def api_key(self) -> str:
        if self.control is None:
            raise GatewayError("No API key is known to this window.")
        return self.control.api_key()

    def logs(self, lines: int = 200) -> str:
        return _call(lambda: self._short().logs(lines=lines))

    def system(self) -> SystemInfo:
        return wire.system_info(_call(lambda: self._short().system()))

    def _stop_daemon(self) -> None:
        with contextlib.suppress(DaemonUnavailable):  # already gone
            self._short().shutdown()

    def _lan_url(self, data: ServerResponse) -> str:
        if not data.lan:
            return ""
        return f"http://{lan_address()}:{data.port}"

    # models

    def models(self) -> tuple[InstalledModel, ...]:
        return tuple(map(wire.installed, _call(lambda: self._short().list_models())))

    def details(self, name: str) -> ModelDetails:
        return wire.model_details(name, _call(lambda: self._short().show(name)))

    def running(self) -> tuple[RunningModel, ...]:
        return tuple(map(wire.running, _call(lambda: self._short().running())))

    def delete(self, name: str) -> None:
        _call(lambda: self._short().delete(name))

    def copy(self, source: str, destination: str) -> None:
        _call(lambda: self._short().copy(source, destination))

    def unload(self, name: str) -> None:
        _call(lambda: self._long().unload(name))

    # pulls and imports

    def pull(self, name: str) -> Iterator[PullProgress]:
        return _stream(lambda: self._long().pull(name), wire.progress(name), _PULL_HINTS)

    def resume_pull(self, name: str) -> Iterator[PullProgress]:
        return _stream(lambda: self._long().resume_pull(name), wire.progress(name), _PULL_HINTS)

    def pause_pull(self, name: str) -> None:
        _call(lambda: self._short().pause_pull(name), _PULL_HINTS)

    def cancel_pull(self, name: str) -> None:
        _call(lambda: self._short().cancel_pull(name), _PULL_HINTS)

    def pulls(self) -> tuple[PullStatus, ...]:
        return tuple(map(wire.pull_status, _call(lambda: self._short().pulls())))

    def import_gguf(self, name: str, path: Path) -> Iterator[PullProgress]:
        return _stream(lambda: self._long().create_from_file(name, path), wire.progress(name))

    # chat

    def chat(
        self,
        model: str,
        turns: Sequence[ChatTurn],
        options: Mapping[str, Any] | None = None,
        keep_alive: str | None = None,
        think: bool | str | None = None,
    ) -> Iterator[ChatDelta | ChatDone]:
        # Images travel inside each message (the Ollama shape), so earlier images stay in context.
        messages = [
            {
                "role": t.role,
                "content": t.content,
                **({"images": list(t.images)} if t.images else {}),
                **({"thinking": t.thinking} if t.thinking else {}),
            }
            for t in turns
        ]
        chunks = _stream(
            lambda: self._long().chat(
                model, messages, options=options or None, keep_alive=keep_alive, think=think
            ),
            wire.chat_events,
        )
        return _flatten(chunks)

    # the hub

    def hub_search(self, query: str, limit: int = 20) -> tuple[HubRepo, ...]:
        found = _call(lambda: self._long().hub_search(query, limit=limit))
        return tuple(map(wire.hub_repo, found))

    def hub_files(self, repo: str) -> tuple[HubFile, ...]:
        return tuple(map(wire.hub_file, _call(lambda: self._long().hub_files(repo))))
