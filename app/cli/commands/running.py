"""The commands about loaded models: ``ps`` (what is in memory, until when) and ``stop``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.formatting import format_size, format_until, short_id, table
from localllm.app.cli.parsing import add_command, add_json_flag, dump_json
from localllm.daemon.api import RunningModel

__all__ = ["register", "same_model"]


def register(commands: argparse._SubParsersAction) -> None:
    ps = add_command(
        commands,
        "ps",
        _ps,
        summary="list the models loaded in memory",
        description="""
            List loaded models: memory used, where they run (CPU/GPU split), context length per
            slot, slots (requests served at once), and when they will be unloaded
            (LOCALLLM_KEEP_ALIVE, or a request's keep_alive).
            Models of a remote engine in use show as "remote NAME" with their requests in
            flight.
            """,
        examples=["localllm ps", "localllm ps --json"],
    )
    add_json_flag(ps)

    stop = add_command(
        commands,
        "stop",
        _stop,
        summary="unload a running model now",
        description="Unload a model from memory now instead of when its keep-alive runs out.",
        examples=["localllm stop qwen2.5:0.5b"],
    )
    stop.add_argument("name", metavar="NAME")


def _ps(context: Context, args: argparse.Namespace) -> int:
    running = context.client().running()
    if args.json:
        context.print(dump_json(running))
        return 0
    now = datetime.now(UTC)
    rows = [_remote_row(model) if model.remote else _local_row(model, now) for model in running]
    headers = ["NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "SLOTS", "KV CACHE", "UNTIL"]
    context.print(table(headers, rows))
    for model in running:  # a context the daemon chose for what fits says so
        if model.context_reason.startswith(_SIZED):
            context.print(f"{model.name or model.model}: {model.context_reason}")
    return 0


_SIZED = "the largest context that fits"  # the daemon's reason for a context it sized


def _local_row(model: RunningModel, now: datetime) -> list[object]:
    return [
        model.name or model.model,
        short_id(model.digest),
        format_size(model.size),
        model.processor or _processor(model),
        model.context_length or "-",
        model.num_parallel or "-",
        f"{model.kv_cache_type}, flash {model.flash_attention}",
        format_until(model.expires_at, now),
    ]


def _remote_row(model: RunningModel) -> list[object]:
    """A model another engine serves: nothing here to size or unload; how busy it is."""
    busy = f"{model.active_requests} in flight"
    return [model.name or model.model, "-", "-", f"remote {model.remote}", "-", "-", "-", busy]


def _processor(model: RunningModel) -> str:
    """``100% GPU``, ``100% CPU`` or ``48%/52% CPU/GPU`` from size and size_vram."""
    size, vram = model.size, model.size_vram
    if not size:
        return "-"
    gpu = round(vram * 100 / size)
    if gpu >= 100:
        return "100% GPU"
    return "100% CPU" if gpu <= 0 else f"{100 - gpu}%/{gpu}% CPU/GPU"


def same_model(wanted: str, name: str) -> bool:
    """Whether ``name`` (as the daemon lists it) is the model the user typed as ``wanted``."""

    def normal(text: str) -> str:
        text = text.strip().lower()
        return text if ":" in text.rsplit("/", 1)[-1] else text + ":latest"

    return normal(wanted) == normal(name)


def _stop(context: Context, args: argparse.Namespace) -> int:
    client = context.client()
    running = client.running()
    names = [m.name or m.model for m in running]
    match = next((name for name in names if same_model(args.name, name)), None)
    if match is None:
        raise CliError(f"model '{args.name}' is not running (see `localllm ps`)")
    client.unload(match)
    return 0
