"""``localllm doctor``: reserved for the setup check (GPU, memory, disk, store, daemon).

A placeholder until that check exists, so the name is taken and scripts get a clear answer.
"""

from __future__ import annotations

import argparse

from app.cli.context import Context
from app.cli.errors import CliError
from app.cli.parsing import add_command

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    add_command(
        commands,
        "doctor",
        _doctor,
        summary="check this computer's setup (not available yet)",
        description="Check the GPU, memory, disk space, the model store and the daemon.",
    )


def _doctor(context: Context, args: argparse.Namespace) -> int:
    raise CliError("`localllm doctor` is not available in this version yet")
