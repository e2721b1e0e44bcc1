"""``localllm pull`` and ``localllm pulls``: download models, with pause and resume.

Ctrl-C during a pull pauses it on the daemon, which keeps what was downloaded; running the
same command again picks up where it stopped (Ollama's pulls could not pause, and its restarts
threw partial downloads away).
"""

from __future__ import annotations

import argparse
import contextlib
import json

from localllm.app.cli.context import Context
from localllm.app.cli.errors import EXIT_INTERRUPTED, CliError
from localllm.app.cli.formatting import format_size, table
from localllm.app.cli.parsing import add_command, add_json_flag, dump_json
from localllm.app.cli.progress import ProgressBoard
from localllm.daemon.api import PullRecordOut
from localllm.daemon.client import ClientError, DaemonClient

__all__ = ["pull_model", "register"]

PAUSED_HINT = "paused; run the same command again to resume"


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands,
        "pull",
        _pull,
        summary="download a model (Ctrl-C pauses, running it again resumes)",
        description="""
            Download a model into the store: a short name from the catalog (qwen2.5:0.5b,
            llama3.2) or any GGUF repository on Hugging Face as hf.co/<org>/<repo>[:quant].
            Progress shows bytes, speed and time left per file. Ctrl-C pauses the download on
            the daemon and keeps what arrived; the same command resumes it.
            """,
        examples=[
            "localllm pull qwen2.5:0.5b",
            "localllm pull hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
            "localllm pull qwen2.5:7b --cancel     # stop and delete the partial download",
            "localllm pull qwen2.5:0.5b --json     # one JSON progress object per line",
        ],
    )
    parser.add_argument("name", metavar="NAME", help="model to download")
    parser.add_argument(
        "--cancel",
        action="store_true",
        help="cancel a running or paused pull of NAME and delete its partial download",
    )
    add_json_flag(parser)

    pulls = add_command(
        commands,
        "pulls",
        _pulls,
        summary="list pulls in progress or paused",
        description="List the downloads the daemon is running or has paused, with progress.",
        examples=["localllm pulls", "localllm pulls --json"],
    )
    add_json_flag(pulls)


def _pull(context: Context, args: argparse.Namespace) -> int:
    if args.cancel:
        context.client().cancel_pull(args.name)
        context.note(f"cancelled the pull of '{args.name}' and deleted its partial download")
        return 0
    outcome = pull_model(context, args.name, as_json=args.json)
    return EXIT_INTERRUPTED if outcome == "interrupted" else 0


def pull_model(context: Context, name: str, *, as_json: bool = False) -> str:
    """Pull ``name`` showing progress; returns ``success``, ``paused`` or ``interrupted``.

    A pull the daemon reports as cancelled (someone ran ``--cancel``) is an error.
    """
    client = context.client()
    board = ProgressBoard(context.err)
    events = client.pull(name)
    status = ""
    try:
        for event in events:
            status = event.status or status
            if as_json:
                context.print(json.dumps(event.model_dump(exclude_none=True)))
            else:
                board.update(event)
    except KeyboardInterrupt:
        _close(events)
        board.finish()
        _pause(client, name)
        context.note(PAUSED_HINT)
        return "interrupted"
    finally:
        _close(events)
    board.finish()
    if status == "cancelled":
        raise CliError(f"the pull of '{name}' was cancelled")
    if status == "paused":
        context.note(PAUSED_HINT)
        return "paused"
    return "success"


def _pause(client: DaemonClient, name: str) -> None:
    """Ask the daemon to pause (dropping the stream alone may already have done it)."""
    with contextlib.suppress(ClientError):
        client.pause_pull(name)


def _close(events: object) -> None:
    close = getattr(events, "close", None)
    if close is not None:
        close()


def _pulls(context: Context, args: argparse.Namespace) -> int:
    pulls = context.client().pulls()
    if args.json:
        context.print(dump_json(pulls))
        return 0
    rows = [_pull_row(pull) for pull in pulls]
    context.print(table(["NAME", "STATUS", "PROGRESS"], rows))
    return 0


def _pull_row(pull: PullRecordOut) -> list[str]:
    total, completed = pull.total, pull.completed
    if total > 0:
        done = f"{int(completed * 100 / total)}% ({format_size(completed)}/{format_size(total)})"
    else:
        done = format_size(completed) if completed else "-"
    return [pull.name, pull.status, done]
