"""Observability: Prometheus metrics (per app, never process-global) and one JSON log line
per request: with its generation's numbers, what the route left out of the request
(``warnings``), and for an error answer its message (``error``), so a client that only shows
"400" (a coding agent retrying) can be debugged from the log. Much of that is the client's
text (a hosted tool's type, a model name, a path): the line is bounded where it is written,
for every route, each string cut to ``_TEXT_CHARS`` and each list to ``_LIST_ITEMS``, with
how much was cut.

Counters and histograms are fed by the request middleware and by inference's "generation
finished" callback; queue depth, loaded models and busy slots are read from the scheduler
at scrape time, so they are never stale, and so are the prompt cache's files on disk
(``scrape``: in a worker thread, since the folder may hold thousands).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from anyio import to_thread
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localllm.daemon.inference import Finished, GenerationStats, GenerationStream
from localllm.daemon.runners import prompt_store
from localllm.daemon.scheduler import Scheduler

__all__ = [
    "CONTENT_TYPE",
    "Metrics",
    "RequestLogMiddleware",
    "log_fields",
    "log_generation",
    "log_warnings",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_GENERATION = "localllm.generation"  # where a request's generation waits for its log line
_FIELDS = "localllm.log_fields"  # and where other work puts what its log line says
_ERROR_BYTES = 2048  # of an error answer's body, read for its message
_AGENT_CHARS = 100  # of a User-Agent header, in the log line
_TEXT_CHARS = 500  # of any other string in the log line
_LIST_ITEMS = 20  # of any list in it (warnings), then how many more there were
_TOKEN_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.2, 0.5, 1)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "localllm_http_requests", "HTTP requests", ["route", "method", "status"], registry=r
        )
        self.request_seconds = Histogram(
            "localllm_http_request_seconds",
            "HTTP request duration",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.prompt_tokens = Counter(
            "localllm_prompt_tokens", "Prompt tokens", ["model"], registry=r
        )
        self.cached_tokens = Counter(
            "localllm_prompt_cached_tokens",
            "Prompt tokens reused from the cache",
            ["model"],
            registry=r,
        )
        self.completion_tokens = Counter(
            "localllm_completion_tokens", "Generated tokens", ["model"], registry=r
        )
        self.generations = Counter(
            "localllm_generations", "Finished generations", ["model", "reason"], registry=r
        )
        self.ttft = Histogram(
            "localllm_time_to_first_token_seconds",
            "Request to first token",
            ["model"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.token_seconds = Histogram(
            "localllm_time_per_output_token_seconds",
            "Time per generated token",
            ["model"],
            buckets=_TOKEN_BUCKETS,
            registry=r,
        )
        self.disk_hits = Counter(
            "localllm_prompt_cache_disk_hits",
            "Requests whose prompt was resumed from the prompt cache on disk",
            ["model"],
            registry=r,
        )
        self.disk_tokens = Counter(
            "localllm_prompt_cache_disk_tokens",
            "Prompt tokens restored from the prompt cache on disk",
            ["model"],
            registry=r,
        )
        self.disk_read_bytes = Counter(
            "localllm_prompt_cache_disk_read_bytes",
            "Bytes read from the prompt cache on disk",
            ["model"],
            registry=r,
        )
        self.disk_restore_seconds = Counter(
            "localllm_prompt_cache_disk_restore_seconds",
            "Time spent reading, checking and restoring prompts from disk",
            ["model"],
            registry=r,
        )
        self.reranked = Counter(
            "localllm_reranked_documents", "Documents scored by rerank", ["model"], registry=r
        )
        self.load_seconds = Histogram(
            "localllm_model_load_seconds",
            "Model load time",
            ["model"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )

    def watch(self, scheduler: Scheduler) -> None:
        """Report ``scheduler``'s queue, models and slots at every scrape."""
        self.registry.register(_SchedulerCollector(scheduler))

    def on_finished(self, model: str, finished: Finished) -> None:
        usage = finished.usage
        self.generations.labels(model, finished.reason).inc()
        self.prompt_tokens.labels(model).inc(usage.prompt_tokens)
        self.cached_tokens.labels(model).inc(usage.cached_tokens)
        self.completion_tokens.labels(model).inc(usage.completion_tokens)
        if usage.completion_tokens:
            self.ttft.labels(model).observe(usage.time_to_first_token)
        if usage.completion_tokens > 1:
            self.token_seconds.labels(model).observe(usage.seconds_per_token)
        if usage.prompt_disk_tokens:
            self.disk_hits.labels(model).inc()
            self.disk_tokens.labels(model).inc(usage.prompt_disk_tokens)
        if usage.prompt_disk_bytes or usage.prompt_disk_seconds:  # a file read, maybe refused
            self.disk_read_bytes.labels(model).inc(usage.prompt_disk_bytes)
            self.disk_restore_seconds.labels(model).inc(usage.prompt_disk_seconds)

    def on_rerank(self, model: str, documents: int, prompt_tokens: int) -> None:
        self.reranked.labels(model).inc(documents)
        self.prompt_tokens.labels(model).inc(prompt_tokens)

    def on_load(self, model: str, seconds: float) -> None:
        self.load_seconds.labels(model).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    async def scrape(self, prompt_cache: Path) -> bytes:
        """The text of ``/metrics``, with the files and bytes in the prompt cache's folder:
        those are read in a worker thread, the rest here, on the loop that changes it."""
        files, size = await to_thread.run_sync(prompt_store.usage, prompt_cache)
        return self.render() + generate_latest(_PromptCacheFolder(files, size))


class _SchedulerCollector:
    def __init__(self, scheduler: Scheduler):
        self._scheduler = scheduler

    def collect(self) -> Iterator[GaugeMetricFamily]:
        status = self._scheduler.status()
        busy = sum(s.busy_slots for s in status)
        pending = self._scheduler.pending
        yield GaugeMetricFamily(
            "localllm_requests_in_flight", "Requests waiting or running", pending
        )
        yield GaugeMetricFamily(
            "localllm_queue_depth", "Requests waiting for a slot or a load", max(0, pending - busy)
        )
        yield GaugeMetricFamily("localllm_models_loaded", "Loaded models", len(status))
        slots = GaugeMetricFamily("localllm_slots_busy", "Busy slots per model", labels=["model"])
        total = GaugeMetricFamily("localllm_slots_total", "Slots per model", labels=["model"])
        memory = GaugeMetricFamily(
            "localllm_model_memory_bytes", "Estimated memory", labels=["model"]
        )
        for s in status:
            slots.add_metric([s.name], s.busy_slots)
            total.add_metric([s.name], s.spec.num_parallel)
            memory.add_metric([s.name], s.estimate_bytes)
        yield from (slots, total, memory)


class _PromptCacheFolder:
    """What the prompt cache's folder held at a scrape (read before, off the loop)."""

    def __init__(self, files: int, size: int):
        self._files = files
        self._size = size

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "localllm_prompt_cache_files", "Files in the prompt cache on disk", self._files
        )
        yield GaugeMetricFamily(
            "localllm_prompt_cache_bytes", "Bytes in the prompt cache on disk", self._size
        )


class RequestLogMiddleware:
    """Counts every HTTP request and writes one JSON log line when its response ends."""

    def __init__(self, app: ASGIApp, metrics: Metrics, logger: logging.Logger | None = None):
        self.app = app
        self.metrics = metrics
        self.log = logger or logging.getLogger("localllm.requests")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]
        error = bytearray()  # the start of an error answer's body

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif status[0] >= 400 and len(error) < _ERROR_BYTES:
                error.extend(message.get("body", b"")[: _ERROR_BYTES - len(error)])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self._record(scope, status[0], time.perf_counter() - started, bytes(error))

    def _record(self, scope: Scope, status: int, seconds: float, error: bytes) -> None:
        route = getattr(scope.get("route"), "path", None) or "other"
        self.metrics.requests.labels(route, scope["method"], str(status)).inc()
        self.metrics.request_seconds.labels(route).observe(seconds)
        line = {
            "event": "request",
            "method": scope["method"],
            "path": scope["path"],
            "status": status,
            "duration_ms": round(seconds * 1000, 2),
        }
        agent = _user_agent(scope)
        if agent:  # who asked: the desktop app tags its own requests, so it can hide them
            line["user_agent"] = agent
        state = scope.get("state", {})
        if status >= 400 and (message := _error_message(error)):
            line["error"] = message
        line.update(_generation_fields(state.get(_GENERATION)))
        line.update(state.get(_FIELDS, {}))
        self.log.info("%s", json.dumps(_bounded(line)))


def _bounded(value: object) -> object:
    """``value`` (a log line's JSON) with each string cut to ``_TEXT_CHARS`` characters and
    each list to ``_LIST_ITEMS`` items, each cut saying how much it left out."""
    if isinstance(value, str):
        if len(value) <= _TEXT_CHARS:
            return value
        return f"{value[:_TEXT_CHARS]}... ({len(value) - _TEXT_CHARS:,} more characters)"
    if isinstance(value, dict):
        return {_bounded(str(key)): _bounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        kept = [_bounded(item) for item in value[:_LIST_ITEMS]]
        if len(value) > _LIST_ITEMS:
            kept.append(f"... and {len(value) - _LIST_ITEMS:,} more")
        return kept
    return value


def _error_message(body: bytes) -> str:
    """The message of an error answer, in any of the three APIs' shapes (``{"error": "..."}``,
    ``{"error": {"message": "..."}}``), else its text."""
    text = body.decode(errors="replace")
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return text.strip()
    if isinstance(error, dict):
        error = error.get("message")
    return error if isinstance(error, str) else text.strip()


def _user_agent(scope: Scope) -> str:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers") or ()  # ASGI's raw pairs
    for name, value in headers:
        if name == b"user-agent":
            return value.decode("latin-1")[:_AGENT_CHARS]
    return ""


def log_warnings(request: Request, warnings: Sequence[str]) -> None:
    """What the route left out of the request, for its log line."""
    if warnings:
        fields = request.scope.setdefault("state", {}).setdefault(_FIELDS, {})
        fields.setdefault("warnings", []).extend(warnings)


def log_generation(request: Request, generation: GenerationStream) -> None:
    """Hand the request's generation to its log line (written when the response ends)."""
    request.scope.setdefault("state", {})[_GENERATION] = generation


def log_fields(request: Request, **fields: object) -> None:
    """Add ``fields`` to the request's log line (work that is no generation: rerank)."""
    request.scope.setdefault("state", {}).setdefault(_FIELDS, {}).update(fields)


def _generation_fields(generation: GenerationStream | None) -> dict[str, Any]:
    """What a request's generation adds to its log line."""
    if generation is None or generation.finished is None:
        return {}
    result = generation.finished
    u = result.usage
    rate = u.completion_tokens / u.generation_seconds if u.generation_seconds > 0 else None
    dropped = generation.truncation
    return {
        **({"truncated": dropped.as_dict()} if dropped is not None else {}),
        "model": generation.model,
        "finish_reason": result.reason,
        "prompt_tokens": u.prompt_tokens,
        "cached_tokens": u.cached_tokens,
        **_disk_fields(u),
        "completion_tokens": u.completion_tokens,
        "load_ms": round(u.load_seconds * 1000, 2),
        "ttft_ms": round(u.time_to_first_token * 1000, 2),
        "prompt_ms": round(u.prompt_seconds * 1000, 2),
        "generation_ms": round(u.generation_seconds * 1000, 2),
        "tokens_per_second": round(rate, 2) if rate else None,
        **({"sampling": u.sampling} if u.sampling else {}),
    }


def _disk_fields(usage: GenerationStats) -> dict[str, Any]:
    """Of the cached tokens, those restored from the prompt cache on disk, and how long that
    took (none when no file was read)."""
    if not usage.prompt_disk_tokens:
        return {}
    return {
        "prompt_disk_tokens": usage.prompt_disk_tokens,
        "prompt_disk_ms": round(usage.prompt_disk_seconds * 1000, 2),
    }
