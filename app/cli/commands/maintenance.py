"""Store upkeep: ``prune`` (delete files no model uses) and ``verify`` (re-hash every blob).

Both run on the daemon, which owns the store and its locks. ``verify`` exits non-zero when
anything is wrong so scripts and cron jobs notice.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from app.cli.context import Context
from app.cli.formatting import format_size, short_id, table
from app.cli.parsing import add_command, add_json_flag, dump_json

__all__ = ["problems", "register"]

_PROBLEM_KEYS = ("corrupt", "missing", "problems", "broken")


def register(commands: argparse._SubParsersAction) -> None:
    prune = add_command(
        commands,
        "prune",
        _prune,
        summary="delete files no model uses",
        description="""
            Delete blobs that no model references and files left behind by interrupted
            writes. Paused and partial downloads are kept (cancel them with
            `localllm pull NAME --cancel`).
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
    removed = _first(result, "removed", "blobs_removed", "deleted", "files")
    count = len(removed) if isinstance(removed, list) else removed
    freed = _first(result, "freed", "bytes_freed", "reclaimed", "size")
    if count is None and freed is None:
        context.print(dump_json(result))
        return 0
    text = f"removed {count or 0} unused file{'' if count == 1 else 's'}"
    context.print(text + (f", freed {format_size(freed)}" if isinstance(freed, int) else ""))
    return 0


def _verify(context: Context, args: argparse.Namespace) -> int:
    result = context.client().verify()
    found = problems(result)
    if args.json:
        context.print(dump_json(result))
        return 1 if found else 0
    if not found:
        checked = _first(result, "checked", "blobs", "verified")
        count = len(checked) if isinstance(checked, list) else checked
        context.print(f"verified {count} blobs: no problems" if count else "no problems found")
        return 0
    rows = [[short_id(p["digest"]), p["problem"], ", ".join(p["models"]) or "-"] for p in found]
    context.print(table(["BLOB", "PROBLEM", "MODELS"], rows))
    broken = sorted({model for p in found for model in p["models"]})
    if broken:
        context.note(f"broken models: {', '.join(broken)} (pull or create them again)")
    return 1


def problems(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every corrupt or missing blob in a verify report as ``{digest, problem, models}``."""
    found = []
    for key in _PROBLEM_KEYS:
        for entry in result.get(key) or []:
            if isinstance(entry, Mapping):
                digest = str(entry.get("digest") or entry.get("blob") or "?")
                problem = str(entry.get("problem") or entry.get("reason") or key)
                models = entry.get("models") or entry.get("affects") or []
            else:
                digest, problem, models = str(entry), key, []
            found.append({"digest": digest, "problem": problem, "models": [str(m) for m in models]})
    return found


def _first(result: Mapping[str, Any], *keys: str) -> Any:
    return next((result[key] for key in keys if result.get(key) is not None), None)
