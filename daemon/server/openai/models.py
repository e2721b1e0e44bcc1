"""``GET /v1/models`` and ``GET /v1/models/{model}``: the store's models in OpenAI's shape."""

from __future__ import annotations

from fastapi import APIRouter, Request

from localllm.daemon.api import Model, ModelList
from localllm.daemon.remotes import Remotes
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.remote_listing import remote_openai_models
from localllm.model_registry.errors import ModelNotFoundError
from localllm.model_registry.names import DEFAULT_NAMESPACE, ModelName, parse_name
from localllm.model_registry.store import ModelEntry, Store

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/models")
async def list_models(request: Request) -> ModelList:
    store = app_part(request, "store", Store)
    local = [_model(entry.name, entry) for entry in store.list_models()]
    return ModelList(data=local + remote_openai_models(app_part(request, "remotes", Remotes)))


@router.get("/v1/models/{model:path}")
async def get_model(model: str, request: Request) -> Model:
    store = app_part(request, "store", Store)
    for listed in remote_openai_models(app_part(request, "remotes", Remotes)):
        if listed.id == model:
            return listed
    name = parse_name(model)
    for entry in store.list_models():
        if entry.name == name:
            return _model(name, entry)
    raise ModelNotFoundError(
        f"model {name.display!r} not found; run `localllm pull {name.display}`"
    )


def _model(name: ModelName, entry: ModelEntry) -> Model:
    owner = "library" if name.namespace == DEFAULT_NAMESPACE else name.namespace
    return Model(id=name.display, created=int(entry.modified), owned_by=owner)
