"""The desktop app's only door to the daemon.

Every call goes through ``daemon.client`` (the one HTTP client all front ends share; any
``DaemonClient`` will do, which is how tests stand one in) and its ``daemon.api`` answer comes
back as a frozen value from ``records`` (converted in ``wire.py``); every client error comes
back as ``GatewayError`` with a hint saying what to do next (``gateway_calls.py``). Calls block,
so callers run them in workers (``workers.py``), never on the UI thread.

Two clients share the address: one with a short timeout for the quick calls (a daemon that
accepts connections but never answers is reported as down within seconds) and one with a long
timeout for what streams or may take a while (chat, pulls, imports, the hub). They are made on
first use, in a worker, because finding the saved API key may ask the system keyring.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localllm.app.gui.state import wire
from localllm.app.gui.state.daemon_control import DaemonControl, lan_address
from localllm.app.gui.state.daemon_log import app_user_agent
from localllm.app.gui.state.found_models import (
    FoundModel,
    ImportStep,
    as_pull_progress,
    found_model,
    import_step,
)
from localllm.app.gui.state.gateway_calls import (
    PULL_HINTS,
    REMOTE_HINTS,
    SPEECH_HINTS,
    TRANSCRIBE_HINTS,
    GatewayError,
    call,
    flatten,
    stream,
)
from localllm.app.gui.state.prompt_cache_view import PromptCacheFreed, PromptCacheUse
from localllm.app.gui.state.records import (
    CatalogModel,
    ChatDelta,
    ChatDone,
    HubFile,
    HubRepo,
    InstalledModel,
    ModelDetails,
    ModelPlan,
    PullProgress,
    PullStatus,
    RunningModel,
    ServerInfo,
    SystemInfo,
)
from localllm.app.gui.state.remotes import RemoteStatus, remote_status
from localllm.daemon.api import ServerResponse
from localllm.daemon.api.local_models import ImportMode
from localllm.daemon.api.remotes import RemoteAddRequest
from localllm.daemon.client import Client, DaemonClient, DaemonUnavailable
from localllm.daemon.client.launcher import admin_token_reader
from localllm.daemon.client.transcripts import Heard

__all__ = ["DEFAULT_BASE_URL", "ChatTurn", "Gateway", "GatewayError"]

DEFAULT_BASE_URL = "http://127.0.0.1:11435"
QUICK_TIMEOUT = 10.0
LONG_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One message of a conversation as the daemon receives it (images base64-encoded)."""

    role: str
    content: str
    images: tuple[str, ...] = ()
    thinking: str = ""  # a reply's reasoning, for templates that keep it
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()  # a reply's calls: (name, arguments)
    tool_name: str = ""  # for a "tool" message: the tool whose answer it is


def _message(t: ChatTurn) -> dict[str, Any]:
    """A turn in the Ollama shape: images inside each message, so earlier images stay in
    context; a reply's tool calls and a tool's answer by the tool's name."""
    calls = [{"function": {"name": name, "arguments": args}} for name, args in t.tool_calls]
    return {
        "role": t.role,
        "content": t.content,
        **({"images": list(t.images)} if t.images else {}),
        **({"thinking": t.thinking} if t.thinking else {}),
        **({"tool_calls": calls} if calls else {}),
        **({"tool_name": t.tool_name} if t.tool_name else {}),
    }


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
        agent = app_user_agent()

        def make(key: str | None, timeout: float) -> DaemonClient:  # at the daemon's address now
            return Client(
                control.url,
                api_key=key,
                timeout=timeout,
                user_agent=agent,
                admin_token=admin_token_reader(control.settings),  # read when a call needs it
            )

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

    def data_folders(self, chats_dir: Path) -> tuple[tuple[str, Path], ...]:
        """The folders the app keeps data in, as the Settings page lists them to open: the
        daemon's models and logs where this window knows its settings, and the chats'."""
        if self.control is None:  # a client stood in (tests): only the chats are ours to show
            return (("Chats and documents", chats_dir),)
        settings = self.control.settings
        return (
            ("Models", settings.models_dir),
            ("Chats and documents", chats_dir),
            ("Logs", settings.log_dir),
        )

    def version(self) -> str:
        return call(lambda: self._short().version())

    def start_daemon(self) -> None:
        if self.control is None:
            raise GatewayError("This window cannot start the daemon.", "Run `localllm serve`.")
        call(self.control.start)

    def server_info(self) -> ServerInfo:
        data = call(lambda: self._short().server())
        return wire.server_info(data, self._lan_url(data))

    def set_lan(self, enabled: bool) -> ServerInfo:
        """Restart the daemon for (or off) the local network; slow (seconds)."""
        control = self.control
        if control is None:
            raise GatewayError("This window did not start the daemon and cannot restart it.")
        key = call(lambda: control.switch(enabled, self._stop_daemon))
        with self._lock:
            self._use_key(key)
        return self.server_info()

    def move_daemon(self, port: int) -> ServerInfo:
        """Restart the daemon on another port; slow (seconds)."""
        key = call(lambda: self._own_control().move(port, self._stop_daemon))
        with self._lock:
            self._use_key(key)  # new clients, at the new address
        return self.server_info()

    def stop_daemon(self) -> None:
        """Stop the daemon and return once it no longer answers."""
        call(lambda: self._own_control().stop(self._stop_daemon))

    def _own_control(self) -> DaemonControl:
        if self.control is None:
            raise GatewayError("This window did not start the daemon and cannot restart it.")
        return self.control

    def api_key(self) -> str:
        if self.control is None:
            raise GatewayError("No API key is known to this window.")
        return self.control.api_key()

    def logs(self, lines: int = 200) -> str:
        return call(lambda: self._short().logs(lines=lines))

    def system(self) -> SystemInfo:
        return wire.system_info(call(lambda: self._short().system()))

    def prompt_cache(self) -> PromptCacheUse:
        """What the daemon's prompt cache on disk holds, and its limit (0: off)."""
        answer = call(lambda: self._short().prompt_cache())
        return PromptCacheUse(answer.files, answer.bytes, answer.limit_bytes)

    def clear_prompt_cache(self) -> PromptCacheFreed:
        """Delete every stored prompt state (the long client: thousands of files may go)."""
        answer = call(lambda: self._long().clear_prompt_cache())
        return PromptCacheFreed(answer.files, answer.freed)

    def _stop_daemon(self) -> None:
        with contextlib.suppress(DaemonUnavailable):  # already gone
            self._short().shutdown()

    def _lan_url(self, data: ServerResponse) -> str:
        if not data.lan:
            return ""
        return f"http://{lan_address()}:{data.port}"

    # models

    def models(self) -> tuple[InstalledModel, ...]:
        return tuple(map(wire.installed, call(lambda: self._short().list_models())))

    def details(self, name: str) -> ModelDetails:
        return wire.model_details(name, call(lambda: self._short().show(name)))

    def running(self) -> tuple[RunningModel, ...]:
        return tuple(map(wire.running, call(lambda: self._short().running())))

    def plan(self, name: str, options: Mapping[str, Any] | None = None) -> ModelPlan:
        """What loading ``name`` with a chat's ``options`` would take (the model's header is
        read, nothing loads): seconds at most the first time."""
        return wire.model_plan(call(lambda: self._long().plan(name, options)))

    def delete(self, name: str) -> None:
        call(lambda: self._short().delete(name))

    def copy(self, source: str, destination: str) -> None:
        call(lambda: self._short().copy(source, destination))

    def unload(self, name: str) -> None:
        call(lambda: self._long().unload(name))

    # remotes: other engines whose models the daemon serves as its own

    def remotes(self) -> tuple[RemoteStatus, ...]:
        found = call(lambda: self._short().remotes(), REMOTE_HINTS)
        return tuple(map(remote_status, found.remotes))

    def add_remote(self, request: RemoteAddRequest) -> RemoteStatus:
        return remote_status(call(lambda: self._short().add_remote(request), REMOTE_HINTS))

    def remove_remote(self, name: str) -> None:
        call(lambda: self._short().remove_remote(name), REMOTE_HINTS)

    # pulls and imports

    def pull(self, name: str) -> Iterator[PullProgress]:
        return stream(lambda: self._long().pull(name), wire.progress(name), PULL_HINTS)

    def resume_pull(self, name: str) -> Iterator[PullProgress]:
        return stream(lambda: self._long().resume_pull(name), wire.progress(name), PULL_HINTS)

    def pause_pull(self, name: str) -> None:
        call(lambda: self._short().pause_pull(name), PULL_HINTS)

    def cancel_pull(self, name: str) -> None:
        call(lambda: self._short().cancel_pull(name), PULL_HINTS)

    def pulls(self) -> tuple[PullStatus, ...]:
        return tuple(map(wire.pull_status, call(lambda: self._short().pulls())))

    def import_gguf(self, name: str, path: Path) -> Iterator[PullProgress]:
        """A daemon on this machine reads the file itself and links it into the store where
        the file system allows; one elsewhere gets it uploaded (a copy)."""
        if self.control is not None and not self.control.remote:
            return stream(lambda: self._long().import_file(path, name=name), as_pull_progress(name))
        return stream(lambda: self._long().create_from_file(name, path), wire.progress(name))

    def local_models(self) -> tuple[FoundModel, ...]:
        """Models the daemon found in other apps' folders (a scan: seconds at most)."""
        return tuple(map(found_model, call(lambda: self._long().local_models().models)))

    def import_found(self, path: str, name: str, mode: ImportMode = "auto") -> Iterator[ImportStep]:
        return stream(lambda: self._long().import_file(path, name=name, mode=mode), import_step)

    # chat

    def chat(
        self,
        model: str,
        turns: Sequence[ChatTurn],
        options: Mapping[str, Any] | None = None,
        keep_alive: str | None = None,
        think: bool | str | None = None,
        truncate: bool = True,
        tools: Sequence[Mapping[str, Any]] | None = None,
        format: Mapping[str, Any] | None = None,
    ) -> Iterator[ChatDelta | ChatDone]:
        """``truncate``: the daemon drops the oldest turns that do not fit the context (and
        says so in ``ChatDone``); False: such a chat is an error. ``tools`` on offer (the
        OpenAI function shape); ``format`` a JSON schema the answer must match (a schema of
        tool calls makes the model call one)."""
        messages = [_message(t) for t in turns]
        chunks = stream(
            lambda: self._long().chat(
                model,
                messages,
                options=options or None,
                keep_alive=keep_alive,
                think=think,
                truncate=None if truncate else False,
                tools=tools or None,
                format=format,
            ),
            wire.chat_events,
        )
        return flatten(chunks)

    def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]:
        """``model``'s vectors for ``texts`` (``/api/embed``), for document search."""
        return call(lambda: self._long().embed(model, list(texts)).embeddings)

    def rerank(self, model: str, query: str, texts: Sequence[str]) -> list[float]:
        """``model``'s relevance scores for ``texts``, in their order (``/api/rerank``)."""
        answer = call(lambda: self._long().rerank(model, query, list(texts)))
        scores = {r.index: r.relevance_score for r in answer.results}
        return [scores[i] for i in range(len(texts))]

    # speech

    def transcribe_text(self, audio: Path, model: str, language: str = "") -> Iterator[str]:
        """The words spoken in ``audio`` (a file the client uploads), a segment at a time as
        ``model`` hears them; ``language`` "" lets it detect the language."""
        return stream(
            lambda: self._long().transcription(audio, model, language or None),
            lambda event: event.text if isinstance(event, Heard) else "",  # "": the end
            TRANSCRIBE_HINTS,
        )

    def speak(self, text: str, voice: str) -> bytes:
        """``text`` spoken by ``voice`` (a speech model of the store), as a WAV file's bytes."""
        return call(lambda: self._long().speak(text, voice), SPEECH_HINTS)

    # the hub

    def hub_catalog(self) -> tuple[CatalogModel, ...]:
        return tuple(map(wire.catalog_model, call(lambda: self._short().hub_catalog())))

    def hub_search(self, query: str, limit: int = 20) -> tuple[HubRepo, ...]:
        found = call(lambda: self._long().hub_search(query, limit=limit))
        return tuple(map(wire.hub_repo, found))

    def hub_files(self, repo: str) -> tuple[HubFile, ...]:
        return tuple(map(wire.hub_file, call(lambda: self._long().hub_files(repo))))

    def hub_plan(
        self,
        repo: str,
        file: str | None = None,
        quant: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ModelPlan:
        """``plan`` for a quant on Hugging Face (``file``, or ``quant``): the daemon reads its
        header there, a few megabytes."""
        answer = call(lambda: self._long().hub_plan(repo, file, quant, options), PULL_HINTS)
        return wire.model_plan(answer)
