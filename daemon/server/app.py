"""The app factory: one FastAPI app per call, its state on ``app.state``, nothing global.

Later routers (the native ``/api/*`` API, auth and CORS) mount onto the same app and reach
the same ``Inference`` through ``app.state``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
from collections.abc import AsyncIterator, Callable
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TypedDict

from fastapi import FastAPI

from localllm.daemon.inference import Inference
from localllm.daemon.models.pulls import PullManager, PullRecords
from localllm.daemon.remotes import Remotes
from localllm.daemon.remotes.hops import HopsMiddleware
from localllm.daemon.runners.build_probe import BuildProbe
from localllm.daemon.runners.types import RunnerError, RunnerSpec
from localllm.daemon.scheduler import (
    MEASURED_FILE,
    MemoryInfo,
    Runner,
    RunnerFactory,
    Scheduler,
    SchedulerConfig,
)
from localllm.daemon.security import (
    ApiKeyMiddleware,
    BodyLimitMiddleware,
    BodyTimeoutMiddleware,
    CorsMiddleware,
    HostCheckMiddleware,
    OriginPolicy,
    is_loopback_address,
)
from localllm.daemon.server import health, rerank
from localllm.daemon.server.anthropic import count_tokens, messages
from localllm.daemon.server.errors import install_error_handlers
from localllm.daemon.server.json_budget import JsonBudgetMiddleware
from localllm.daemon.server.metrics import Metrics, RequestLogMiddleware
from localllm.daemon.server.native import (
    blobs,
    control,
    create,
    embed,
    generate,
    hub,
    local_models,
    models,
    plan,
    prompt_cache,
    pulls,
    remotes,
)
from localllm.daemon.server.native import system as native_system
from localllm.daemon.server.openai import (
    audio,
    chat,
    completions,
    embeddings,
    responses,
    speech,
)
from localllm.daemon.server.openai import models as openai_models
from localllm.daemon.server.openai.response_store import ResponseStore
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.settings import Settings
from localllm.daemon.speech.pool import speakers
from localllm.daemon.transcription.pool import transcribers
from localllm.model_registry.pull import Puller
from localllm.model_registry.store import Store

__all__ = ["create_app"]


def create_app(
    settings: Settings,
    *,
    store: Store | None = None,
    runner_factory: RunnerFactory | None = None,
    memory_probe: Callable[[], MemoryInfo] | None = None,
    gpu_probe: Callable[[], list[int]] | None = None,
    puller: Puller | None = None,
    admin_token: str | None = None,
) -> FastAPI:
    """A daemon app for ``settings``; the keyword arguments replace its parts in tests.

    ``admin_token`` is what remotes' changes need (``server.admin``): the entry point passes
    the one in the config folder; without one (and no ``settings.admin_token``) a random one
    nobody knows is made, and remotes cannot be changed."""
    store = store or Store(settings.models_dir)
    probes = _probes(memory_probe, gpu_probe)
    metrics = Metrics()
    scheduler = Scheduler(
        _scheduler_config(settings),
        runner_factory or functools.partial(_start_runner_process, env=dict(settings.runner_env)),
        on_load=metrics.on_load,
        **probes,
    )
    metrics.watch(scheduler)
    remote_models = Remotes(settings, metrics.registry, store=store)
    inference = Inference(
        store, scheduler, settings, on_finished=metrics.on_finished, remotes=remote_models
    )

    app = FastAPI(
        title="localllm", version=_version(), lifespan=_lifespan, docs_url=None, redoc_url=None
    )
    app.state.settings = settings
    app.state.redactor = PathRedactor.for_settings(settings)
    app.state.store = store
    app.state.scheduler = scheduler
    app.state.inference = inference
    app.state.remotes = remote_models
    app.state.admin_token = admin_token or settings.admin_token or secrets.token_urlsafe(32)
    app.state.metrics = metrics
    app.state.build = BuildProbe(dict(settings.runner_env))  # what llama.cpp was compiled for
    app.state.responses = ResponseStore()  # kept for previous_response_id, in memory only
    app.state.transcribers = transcribers(
        settings.keep_alive_seconds,
        settings.log_dir,
        dict(settings.runner_env),
        settings.num_threads,
        make_room=scheduler.free_up,
    )
    scheduler.peers.add(app.state.transcribers)
    app.state.speakers = speakers(
        settings.keep_alive_seconds,
        settings.log_dir,
        dict(settings.runner_env),
        settings.num_threads,
        make_room=scheduler.free_up,
    )
    scheduler.peers.add(app.state.speakers)
    app.state.pulls = PullManager(
        puller or _puller(settings, store),
        PullRecords(settings.data_dir / "pulls.json"),
        max_running=settings.max_pulls,
    )
    for module in (health, *_OPENAI, *_ANTHROPIC, *_NATIVE):
        app.include_router(module.router)
    install_error_handlers(app)
    app.add_middleware(JsonBudgetMiddleware)  # inside the body limit: the body is bounded
    app.add_middleware(RequestLogMiddleware, metrics=metrics)
    app.add_middleware(HopsMiddleware)
    _install_guards(app, settings)
    return app


_OPENAI: tuple[ModuleType, ...] = (
    chat,
    completions,
    responses,
    embeddings,
    openai_models,
    audio,
    speech,
)
_ANTHROPIC: tuple[ModuleType, ...] = (messages, count_tokens)
_NATIVE: tuple[ModuleType, ...] = (
    models,
    generate,
    embed,
    pulls,
    blobs,
    create,
    hub,
    native_system,
    control,
)
_NATIVE += (local_models, remotes, plan, prompt_cache)
_NATIVE += (rerank,)  # /api/rerank, and /v1/rerank with its aliases


class _Probes(TypedDict, total=False):
    """The scheduler's probes a test replaces; the scheduler's own for those left out."""

    memory_probe: Callable[[], MemoryInfo]
    gpu_probe: Callable[[], list[int]]


def _probes(
    memory_probe: Callable[[], MemoryInfo] | None, gpu_probe: Callable[[], list[int]] | None
) -> _Probes:
    probes: _Probes = {}
    if memory_probe:
        probes["memory_probe"] = memory_probe
    if gpu_probe:
        probes["gpu_probe"] = gpu_probe
    return probes


def _puller(settings: Settings, store: Store) -> Puller:
    return Puller(
        store,
        endpoint=settings.hf_endpoint,
        token=settings.hf_token,
        catalog_path=settings.catalog_path,
    )


def _install_guards(app: FastAPI, settings: Settings) -> None:
    """Safe by default. Starlette wraps the last-added middleware outermost, so requests meet
    the Host check first, then CORS, then the API key, then the body limit and timeout."""
    app.add_middleware(BodyTimeoutMiddleware, timeout=settings.body_timeout)
    app.add_middleware(BodyLimitMiddleware)
    app.add_middleware(ApiKeyMiddleware, api_key=settings.api_key)
    app.add_middleware(CorsMiddleware, policy=OriginPolicy.from_settings(settings.origins))
    app.add_middleware(HostCheckMiddleware, enabled=is_loopback_address(settings.host))


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    scheduler: Scheduler = app.state.scheduler
    loop = asyncio.get_running_loop()
    reaper = loop.create_task(scheduler.run())
    checks = loop.create_task(app.state.remotes.run())
    try:
        yield
    finally:
        reaper.cancel()
        checks.cancel()
        await app.state.remotes.close()
        await app.state.pulls.shutdown()  # pauses running pulls: their partials stay
        await scheduler.shutdown()
        await app.state.transcribers.close()
        await app.state.speakers.close()
        app.state.inference.close()


def _scheduler_config(settings: Settings) -> SchedulerConfig:
    return SchedulerConfig(
        keep_alive=settings.keep_alive_seconds,
        max_loaded_models=settings.max_loaded_models,
        max_queue=settings.max_queue,
        log_dir=settings.log_dir,
        context_cap=settings.context_cap,
        memory_file=settings.data_dir / MEASURED_FILE,
    )


async def _start_runner_process(
    spec: RunnerSpec, log_path: Path | None, env: dict[str, str]
) -> Runner:
    from localllm.daemon.runners.process import RunnerProcess
    from localllm.daemon.runners.selftest import LOAD_CRASH_SIGNALS, explain_load_crash

    try:
        return await RunnerProcess.start(spec, log_path=log_path, env=env)
    except RunnerError as error:
        if error.exit_signal not in LOAD_CRASH_SIGNALS:
            raise
        raise await explain_load_crash(error, env) from None


def _version() -> str:
    try:
        return metadata.version("localllm")
    except metadata.PackageNotFoundError:
        return "0.0.0"
