"""``GET /api/local-models`` and ``POST /api/import``: models already on this computer.

The scan looks only where the daemon's settings say (never a path from a request). Both
routes deal in files on the daemon's machine, so they serve only a caller on loopback or one
holding the API key: with a key configured every route already requires it, and without one
the daemon listens on loopback only; the check here holds even if that ever changed. The
path must be a GGUF model file, a Whisper model folder in CTranslate2 form or a Piper voice
(its ``.onnx`` and ``.onnx.json``, or their folder): their headers and config are read first,
nothing else, and errors name files, never their directories.
"""

from __future__ import annotations

from pathlib import Path

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.responses import Response

from localllm.daemon.api.local_models import (
    ImportProgress,
    ImportRequest,
    LocalModelOut,
    LocalModelsResponse,
)
from localllm.daemon.errors import BadRequestError, ForbiddenError
from localllm.daemon.models.local_import import import_steps
from localllm.daemon.security import is_loopback_address
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.ndjson import ndjson_line, ndjson_stream
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.settings import Settings
from localllm.model_registry.errors import ModelExistsError, ModelKindError, NotLinkableError
from localllm.model_registry.local_models import (
    FoundModel,
    ScanRoots,
    describe_file,
    describe_folder,
    describe_voice,
    scan,
)
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import Store
from localllm.model_registry.voice import looks_like_voice

__all__ = ["router", "scan_roots"]

router = APIRouter()


def scan_roots(settings: Settings) -> ScanRoots:
    return ScanRoots.defaults(
        settings.home, settings.hf_hub_cache, settings.ollama_models, settings.import_dirs
    )


@router.get("/api/local-models", response_model=LocalModelsResponse)
async def local_models(request: Request) -> LocalModelsResponse:
    _check_caller(request)  # the answer names paths on the daemon's machine
    store = app_part(request, "store", Store)
    roots = scan_roots(app_part(request, "settings", Settings))
    result = await to_thread.run_sync(scan, roots, store)
    return LocalModelsResponse(models=[_out(m) for m in result.models], truncated=result.truncated)


@router.post("/api/import", response_model=None)
async def import_model(body: ImportRequest, request: Request) -> Response:
    _check_caller(request)
    if body.name is not None:
        parse_name(body.name)  # a bad name is a 400 before any file is read
    path = _checked_path(body.path)
    store = app_part(request, "store", Store)
    model = await to_thread.run_sync(_describe, path, store)
    target = parse_name(body.name or model.name)
    if store.exists(target):  # a 409 now, not an error line mid-stream
        raise ModelExistsError(f"{target.display} already exists: choose another name")
    if body.mode == "link" and not model.linkable:
        raise NotLinkableError(
            f"{path.name} is on another file system than the store: it can only be copied "
            f"({model.size:,} bytes); send mode 'copy' or 'auto'"
        )
    steps = import_steps(store, model, body.name, body.mode)
    if body.stream:
        lines = (ndjson_line(step) async for step in steps)
        return ndjson_stream(lines, app_part(request, "redactor", PathRedactor))
    last = ImportProgress(status="")
    async for step in steps:
        last = step
    return JSONResponse(last.model_dump(exclude_none=True))


def _check_caller(request: Request) -> None:
    settings = app_part(request, "settings", Settings)
    client = request.client.host if request.client else ""
    if settings.api_key is None and not is_loopback_address(client):
        raise ForbiddenError(
            "the files on the daemon's machine are for a caller on loopback or with the API key"
        )


def _checked_path(text: str) -> Path:
    path = Path(text)
    if "\x00" in text or not path.is_absolute():
        raise BadRequestError(
            "path must be an absolute path to a .gguf file, a Whisper model folder or a Piper "
            "voice (its .onnx, or its folder)",
            param="path",
        )
    if not path.is_file() and not path.is_dir():
        raise BadRequestError(f"no such file: {path.name}", param="path")
    return path


def _describe(path: Path, store: Store) -> FoundModel:
    """A GGUF file, a Piper voice (a folder with one, or either of its files), or a folder that
    must be a Whisper model (a 400 says what it lacks)."""
    if not path.is_dir() and not looks_like_voice(path):
        return describe_file(path, store)
    try:
        return (
            describe_voice(path, store) if looks_like_voice(path) else describe_folder(path, store)
        )
    except ModelKindError as error:
        raise BadRequestError(str(error), param="path") from None


def _out(model: FoundModel) -> LocalModelOut:
    return LocalModelOut(
        source=model.source,
        name=model.name,
        path=str(model.path),
        size=model.size,
        architecture=model.architecture,
        quantization=model.quantization,
        parameter_size=model.parameter_size,
        shards=len(model.files),
        projector=model.projector.name if model.projector else None,
        in_store=model.in_store,
        linkable=model.linkable,
    )
