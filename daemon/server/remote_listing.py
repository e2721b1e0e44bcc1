"""Remote models in the model lists (``/api/tags``, ``/v1/models``, ``/api/ps``): read from the
remotes' cached lists, so a listing never waits on a remote's network."""

from __future__ import annotations

import time

from localllm.daemon.api import Model
from localllm.daemon.api.native_models import (
    ModelDetailsOut,
    ModelSummary,
    RunningModel,
    ShowResponse,
)
from localllm.daemon.remotes import Remotes
from localllm.daemon.server.native.describe import iso_time

__all__ = ["remote_openai_models", "remote_running", "remote_show", "remote_summaries"]


def remote_summaries(remotes: Remotes) -> list[ModelSummary]:
    now = iso_time(time.time())
    return [
        ModelSummary(
            name=name,
            model=name,
            modified_at=now,
            size=0,
            digest="",
            details=ModelDetailsOut(format="remote"),
            remote=remote,
        )
        for name, remote in remotes.models()
    ]


def remote_show(name: str, remote: str, remote_id: str) -> ShowResponse:
    """What ``/api/show`` can say of a remote's model without asking it: whose it is. Ollama
    clients (Open WebUI) show a model before they chat with it."""
    return ShowResponse(
        modelfile=f"# served by remote {remote!r} as {remote_id!r}\n",
        parameters="",
        template="",
        system="",
        license="",
        details=ModelDetailsOut(format="remote"),
        model_info={"general.remote": remote, "general.remote_id": remote_id},
        capabilities=["completion"],  # what else it can do is the remote's to say
        modified_at=iso_time(time.time()),
    )


def remote_openai_models(remotes: Remotes) -> list[Model]:
    now = int(time.time())
    return [Model(id=name, created=now, owned_by=remote) for name, remote in remotes.models()]


def remote_running(remotes: Remotes) -> list[RunningModel]:
    soon = iso_time(time.time())
    return [
        RunningModel(
            name=name,
            model=name,
            size=0,
            digest="",
            details=ModelDetailsOut(format="remote"),
            expires_at=soon,
            size_vram=0,
            context_length=0,
            processor=f"remote {remote}",
            active_requests=count,
            remote=remote,
        )
        for name, remote, count in remotes.in_use()
    ]
