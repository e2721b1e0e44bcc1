"""Store upkeep: ``prune`` (delete files no model uses) and ``verify`` (re-hash every blob).

Both run on the daemon, which owns the store and its locks. ``verify`` exits non-zero when
anything is wrong so scripts and cron jobs notice.
"""

from __future__ import annotations

import argparse

from localllm.app.cli.context import Context
from localllm.app.cli.formatting import format_size, short_id, table
from localllm.app.cli.parsing import add_command, add_json_flag, dump_json
from localllm.daemon.api import VerifyResponse

__all__ = ["problems", "register"]


def register(commands: argparse._SubParsersAction) -> None:
    prune = add_command(
        commands,
        "prune",
        _prune,
        summary="delete files no model uses",
        description="""
            Delete blobs that no model references and files left behind by interrupted
            writes, and clear the prompt cache on disk (the saved state of long prompts,
            which only makes their next run start sooner). Paused and partial downloads are
            kept (cancel them with `localllm pull NAME --cancel`).
            """,
        examples=["localllm prune"],
    )
    add_json_flag(prune)

    verify = add_command(
        commands,
        "verify",
        _verify,
        summary="check every model file against its sha256",
        description="""
            Re-hash every blob in the store and report the ones that are corrupt or missing
            and the models they break. Exits with status 1 if it finds any; pull or create
            those models again to repair them.
            """,
        examples=["localllm verify", "localllm verify --json"],
    )
    add_json_flag(verify)


def _prune(context: Context, args: argparse.Namespace) -> int:
    result = context.client().prune()
    if args.json:
        context.print(dump_json(result))
        return 0
    count = len(result.removed)
    text = f"removed {count} unused file{'' if count == 1 else 's'}"
    context.print(f"{text}, freed {format_size(result.freed)}")
    if result.prompt_cache_files:
        files = result.prompt_cache_files
        context.print(
            f"cleared the prompt cache: {files} file{'' if files == 1 else 's'}, "
            f"{format_size(result.prompt_cache_freed)}"
        )
    return 0


def _verify(context: Context, args: argparse.Namespace) -> int:
    result = context.client().verify()
    found = problems(result)
    if args.json:
        context.print(dump_json(result))
        return 1 if found else 0
    if not found:
        count = result.checked
        context.print(f"verified {count} blobs: no problems" if count else "no problems found")
        return 0
    rows = [
        [short_id(digest), problem, ", ".join(models) or "-"] for digest, problem, models in found
    ]
    context.print(table(["BLOB", "PROBLEM", "MODELS"], rows))
    broken = sorted({model for _, _, models in found for model in models})
    if broken:
        context.note(f"broken models: {', '.join(broken)} (pull or create them again)")
    return 1


def problems(result: VerifyResponse) -> list[tuple[str, str, list[str]]]:
    """Every corrupt or missing blob in a verify report as ``(digest, problem, models)``."""
    found = [(p.digest, "corrupt", p.models) for p in result.corrupt]
    return found + [(p.digest, "missing", p.models) for p in result.missing]
