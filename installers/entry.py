"""The bundle's entry point: ``localllm ARGS`` runs the CLI, ``localllm -m MODULE ARGS`` a module.

The daemon and its runners start their subprocesses as ``sys.executable -m daemon serve`` and
``sys.executable -m daemon.runners.worker``. In a frozen bundle ``sys.executable`` is this
program, not a Python interpreter, so it answers ``-m`` the way ``python -m`` does and every one
of those code paths keeps working unchanged.

``localllm-app`` (the windowed twin on Windows and macOS) opens the desktop app when started
with no arguments, as the Start menu and the Dock start it.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "run_module"]

GUI_LAUNCHER = "localllm-app"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _give_streams_somewhere()
    if len(argv) >= 2 and argv[0] == "-m":
        return run_module(argv[1], argv[2:])
    if not argv and Path(sys.executable).stem == GUI_LAUNCHER:
        argv = ["app"]
    from app.cli.main import main as cli_main

    return cli_main(argv)


def run_module(name: str, args: Sequence[str]) -> int:
    """``python -m NAME ARGS``: run the module as ``__main__`` with those arguments."""
    sys.argv = [name, *args]
    runpy.run_module(name, run_name="__main__", alter_sys=True)
    return 0


def _give_streams_somewhere() -> None:
    """A windowed program has no console: without this, the first log line would raise."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 (lives as long as we do)


if __name__ == "__main__":
    sys.exit(main())
