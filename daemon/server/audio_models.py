"""Audio models (Whisper for transcription, Piper voices for speech) as the native API sees
them: the runners ``/api/ps`` lists beside the llama.cpp ones, and a load or an unload
(``localllm stop``, ``rm``) of a model that has no llama.cpp runner.

A runner is kept under its model's listed name (``tiny:latest`` for ``tiny``), so every route
that names the model reaches the same runner."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anyio import to_thread
from starlette.requests import HTTPConnection

from localllm.daemon.api.native_models import RunningModel
from localllm.daemon.runners.kept import KeptRunner, RunnerPool
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.native.describe import details_out, iso_time, listed_name
from localllm.model_registry.errors import (
    CorruptManifestError,
    InvalidNameError,
    ModelNotFoundError,
)
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store import LayerType, Store

__all__ = ["AudioModel", "audio_model", "audio_pools", "audio_rows", "pool_for", "runner_key"]
__all__ += ["unload_or_load"]

# the app.state part that keeps each kind's runners, by the layer type of its files
_POOLS: Mapping[LayerType, str] = {LayerType.CT2: "transcribers", LayerType.VOICE: "speakers"}


@dataclass(frozen=True, slots=True)
class AudioModel:
    name: ModelName
    kind: LayerType  # CT2 (Whisper) or VOICE (Piper)


def audio_model(store: Store, text: str) -> AudioModel | None:
    """The stored audio model ``text`` names; None for any other (a GGUF model, a remote's,
    none at all): those go the llama.cpp way. Blocking: call it off the loop."""
    try:
        name = parse_name(text)
        manifest = store.read_manifest(name)
    except (InvalidNameError, ModelNotFoundError, CorruptManifestError, OSError):
        return None
    kind = next((kind for kind in _POOLS if manifest.layers_of(kind)), None)
    return AudioModel(name, kind) if kind is not None else None


def runner_key(name: ModelName) -> str:
    return listed_name(name)


def pool_for(connection: HTTPConnection, kind: LayerType) -> RunnerPool[Any]:
    """The pool that keeps the runners of ``kind``."""
    return app_part(connection, _POOLS[kind], RunnerPool)


async def unload_or_load(
    store: Store, pool: RunnerPool[Any], model: AudioModel, unload: bool
) -> str:
    """Stop the model's runner now (``unload``), or start it, as a request with no prompt
    does for a chat model; the name it is listed under."""
    key = runner_key(model.name)
    if unload:
        await pool.unload(key)
    else:
        folder = await to_thread.run_sync(store.model_folder, model.name, model.kind)
        await pool.load(key, folder)
    return key


def audio_pools(connection: HTTPConnection) -> list[RunnerPool[Any]]:
    return [pool_for(connection, kind) for kind in _POOLS]


def audio_rows(store: Store, loaded: Sequence[tuple[KeptRunner[Any], float]]) -> list[RunningModel]:
    """``/api/ps``'s rows for the ``loaded`` audio runners (each with its pool's keep-alive).
    Blocking (it reads their manifests): call it off the loop."""
    return [_row(store, kept, keep_alive) for kept, keep_alive in loaded]


def _row(store: Store, kept: KeptRunner[Any], keep_alive: float) -> RunningModel:
    try:
        manifest = store.read_manifest(parse_name(kept.name))
        digest, details = manifest.model_id.hex, details_out(store.read_config(manifest))
    except (InvalidNameError, ModelNotFoundError, CorruptManifestError, OSError):
        digest, details = "", details_out({})  # deleted while loaded
    info = kept.runner.info
    expires = kept.expires_at or time.time() + keep_alive  # in use: from its last request
    on_cpu = info.device == "cpu"
    return RunningModel(
        name=kept.name,
        model=kept.name,
        size=info.memory_bytes,
        digest=digest,
        details=details,
        expires_at=iso_time(expires),
        size_vram=0 if on_cpu else info.memory_bytes,
        context_length=0,
        processor="100% CPU" if on_cpu else "100% GPU",
        active_requests=kept.users,
        num_parallel=1,  # one request at a time, in order
    )
