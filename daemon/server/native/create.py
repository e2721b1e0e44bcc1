"""``POST /api/create``: a model from a Modelfile whose files are uploaded blobs.

``create`` accepts files only as uploaded blobs (``/api/blobs``), never a path on this machine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.responses import Response

from localllm.daemon.api.native_models import CreateRequest, ProgressResponse
from localllm.daemon.errors import BadRequestError, TemplateBudgetError, TemplateError
from localllm.daemon.inference.templates import ChatTemplate
from localllm.daemon.models.create import blob_resolver, check_create, create_model, normalize_quant
from localllm.daemon.remotes import Remotes
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.ndjson import ndjson_line, ndjson_stream
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.settings import Settings
from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import InvalidParameterError
from localllm.model_registry.modelfile import (
    PARAMETER_TYPES,
    Adapter,
    Modelfile,
    from_is_path,
    parse_modelfile,
)
from localllm.model_registry.names import parse_name
from localllm.model_registry.parameters import check_parameter
from localllm.model_registry.store import Store

__all__ = ["router"]

router = APIRouter()


@router.post("/api/create", response_model=None)
async def create(body: CreateRequest, request: Request) -> Response:
    store = app_part(request, "store", Store)
    settings = app_part(request, "settings", Settings)
    app_part(request, "remotes", Remotes).refuse_local_work(body.model, "create")
    name = parse_name(body.model)
    files = _digests(body.files) | _digests(body.adapters)
    modelfile = await to_thread.run_sync(_modelfile, body, files)  # a text of up to 32 MiB
    quant = normalize_quant(body.quantize)
    resolve = blob_resolver(store, files)
    if modelfile.template is not None:
        await to_thread.run_sync(_check_template, modelfile.template)
    await to_thread.run_sync(check_create, store, modelfile, resolve, quant)
    work_dir, env = settings.data_dir / "tmp", settings.runner_env
    steps = create_model(store, name, modelfile, resolve, quant, work_dir, dict(env))
    if body.stream:
        lines = (ndjson_line(ProgressResponse.model_validate(step)) async for step in steps)
        return ndjson_stream(lines, app_part(request, "redactor", PathRedactor))
    last: dict[str, str] = {}
    async for step in steps:
        last = step
    return JSONResponse(ProgressResponse.model_validate(last).model_dump(exclude_none=True))


def _check_template(source: str) -> None:
    """A TEMPLATE that cannot be rendered is refused now, not at the model's first chat."""
    try:
        ChatTemplate(source, "Modelfile")
    except TemplateBudgetError:
        raise
    except TemplateError as error:
        raise BadRequestError(str(error), param="template") from None


def _digests(files: Mapping[str, str] | None) -> dict[str, Digest]:
    return {str(ref): Digest.parse(digest) for ref, digest in (files or {}).items()}


def _modelfile(body: CreateRequest, files: dict[str, Digest]) -> Modelfile:
    """The request as one Modelfile: its text, then the structured fields on top."""
    text = parse_modelfile(body.modelfile) if body.modelfile else None
    source = body.from_ or (text.from_ if text else None) or _only_file(body.files)
    base = text or Modelfile(from_=source)
    fields: dict[str, Any] = {"from_": _as_reference(source, files)}
    if body.template is not None:
        fields["template"] = body.template
    if body.system is not None:
        fields["system"] = body.system
    if body.parameters:
        fields["parameters"] = {**base.parameters, **_parameters(body.parameters)}
    if body.license is not None:
        fields["license"] = [body.license] if isinstance(body.license, str) else body.license
    if body.messages is not None:
        fields["messages"] = [(m.role, m.content) for m in body.messages]
    if body.adapters:
        added = [Adapter(_as_reference(r, files)) for r in body.adapters]
        fields["adapters"] = [*base.adapters, *added]
    if body.draft is not None:
        fields["draft"] = _as_reference(body.draft, files)
    return dataclasses.replace(base, **fields)


def _only_file(files: Mapping[str, str] | None) -> str:
    if not files:
        raise BadRequestError("create needs a Modelfile, `from`, or an uploaded file in `files`")
    if len(files) == 1:
        return next(iter(files))
    if not any(name.lower().endswith(".gguf") for name in files):
        raise BadRequestError(
            "localllm creates models from GGUF files, and none was sent (safetensors files "
            "and their configs, as `ollama create` takes, are not GGUF): convert the model "
            "with llama.cpp's convert_hf_to_gguf.py, then create it from the .gguf",
            param="files",
        )
    raise BadRequestError("several files were sent: say which is the model in `from`")


def _as_reference(reference: str, files: dict[str, Digest]) -> str:
    """An uploaded file's key as a path-like reference (``model.gguf`` -> ``./model.gguf``)."""
    if reference in files and not from_is_path(reference):
        files[f"./{reference}"] = files[reference]
        return f"./{reference}"
    return reference


def _parameters(values: Mapping[str, Any]) -> dict[str, object]:
    """Structured ``parameters``, checked against the table every other path uses."""
    checked: dict[str, object] = {}
    for key, value in values.items():
        if key not in PARAMETER_TYPES:
            raise BadRequestError(f"unknown parameter {key[:40]!r}", param="parameters")
        try:
            checked[key] = check_parameter(key, value)
        except InvalidParameterError as error:
            raise BadRequestError(f"parameter {error}", param="parameters") from None
    return checked
