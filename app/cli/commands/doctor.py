"""``localllm doctor``: check this computer's setup and say what to fix.

Reports what the installed llama.cpp build supports (asked of it in a child process), the GPUs
and memory, the model store and its free space, the data/config/log folders, and whether the
daemon runs and serves the same store as this shell. It never starts the daemon. Exits 1 only
when something is broken, so scripts can run it as a health check.
"""

from __future__ import annotations

import argparse

from localllm.app.cli.context import Context
from localllm.app.cli.doctor import collect, findings, render_table, to_json
from localllm.app.cli.parsing import add_command, dump_json

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    doctor = add_command(
        commands,
        "doctor",
        _doctor,
        summary="check this computer's setup (GPU, memory, disk, store, daemon)",
        description="""
            Check what the installed llama.cpp build supports (CPU, CUDA, Metal, ...), the GPUs
            and memory of this computer, where models are stored and the free space there,
            where settings and logs are kept, and whether the daemon runs and uses the same
            model store. Exits with status 1 if something is broken.
            """,
        examples=["localllm doctor", "localllm doctor --json"],
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")


def _doctor(context: Context, args: argparse.Namespace) -> int:
    report = collect(context.settings)
    found = findings(report)
    if args.json:
        context.print(dump_json(to_json(report, found)))
    else:
        context.print(render_table(report, found))
    return 1 if any(finding.level == "error" for finding in found) else 0
