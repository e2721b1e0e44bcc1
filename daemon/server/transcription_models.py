"""Transcription models as the native API sees them: the runners ``/api/ps`` lists, and a load
or an unload (``localllm stop``) of a Whisper model, which has no llama.cpp runner.

A runner is kept under its model's listed name (``tiny:latest`` for ``tiny``),
so every route that names the model reaches the same runner."""

from __future__ import annotations

import time

from anyio import to_thread

from localllm.daemon.api.native_models import RunningModel
from localllm.daemon.server.native.describe import details_out, iso_time, listed_name
from localllm.daemon.transcription.pool import LoadedTranscriber, Transcribers
from localllm.model_registry.errors import (
    CorruptManifestError,
    InvalidNameError,
    ModelNotFoundError,
)
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store import Store

__all__ = ["runner_key", "running_transcribers", "transcription_model", "unload_or_load"]


def transcription_model(store: Store, text: str) -> ModelName | None:
    """The stored transcription model ``text`` names; None for any other (a GGUF model, a
    remote's, none at all): those go the llama.cpp way. Blocking: call it off the loop."""
    try:
        name = parse_name(text)
        return name if store.read_manifest(name).is_transcription else None
    except (InvalidNameError, ModelNotFoundError, CorruptManifestError, OSError):
        return None


def runner_key(name: ModelName) -> str:
    return listed_name(name)


async def unload_or_load(store: Store, pool: Transcribers, name: ModelName, unload: bool) -> str:
    """Stop the model's runner now (``unload``), or start it, as a request with no prompt
    does for a chat model; the name it is listed under."""
    key = runner_key(name)
    if unload:
        await pool.unload(key)
    else:
        folder = await to_thread.run_sync(store.model_folder, name)
        await pool.load(key, folder)
    return key


def running_transcribers(store: Store, pool: Transcribers) -> list[RunningModel]:
    """``/api/ps``'s rows for the loaded transcription runners. Blocking (it reads their
    manifests): call it off the loop."""
    return [_row(store, loaded, pool.keep_alive) for loaded in pool.loaded()]


def _row(store: Store, loaded: LoadedTranscriber, keep_alive: float) -> RunningModel:
    try:
        manifest = store.read_manifest(parse_name(loaded.name))
        digest, details = manifest.model_id.hex, details_out(store.read_config(manifest))
    except (InvalidNameError, ModelNotFoundError, CorruptManifestError, OSError):
        digest, details = "", details_out({})  # deleted while loaded
    info = loaded.runner.info
    expires = loaded.expires_at or time.time() + keep_alive  # in use: from its last request
    return RunningModel(
        name=loaded.name,
        model=loaded.name,
        size=info.memory_bytes,
        digest=digest,
        details=details,
        expires_at=iso_time(expires),
        size_vram=0 if info.device == "cpu" else info.memory_bytes,
        context_length=0,
        processor="100% CPU" if info.device == "cpu" else "100% GPU",
        active_requests=loaded.users,
        num_parallel=1,  # one request at a time, in order
    )
