"""The ``localllm`` subcommands, one module per group; each has ``register(commands)``.

The order here is the order ``localllm --help`` lists them in.
"""

from __future__ import annotations

from localllm.app.cli.commands import (
    accounts,
    create,
    doctor,
    launch,
    local_import,
    maintenance,
    models,
    programs,
    pull,
    remotes,
    run,
    running,
    say,
    transcribe,
)

__all__ = ["COMMAND_MODULES"]

COMMAND_MODULES = (
    run,
    pull,
    models,
    running,
    create,
    local_import,
    remotes,
    maintenance,
    accounts,
    programs,
    launch,
    transcribe,
    say,
    doctor,
)
