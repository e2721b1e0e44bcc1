"""The bundle's entry point: ``localllm ARGS`` runs the CLI, ``localllm -m MODULE ARGS`` a module.

The daemon and its runners start their subprocesses as ``sys.executable -m localllm.daemon serve``
and ``sys.executable -m localllm.daemon.runners.worker``. In a frozen bundle ``sys.executable`` is
this program, not a Python interpreter, so it answers ``-m`` the way ``python -m`` does and every
one of those code paths keeps working unchanged.

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
    from localllm.app.cli.main import main as cli_main

    return cli_main(argv)


def run_module(name: str, args: Sequence[str]) -> int:
    """``python -m NAME ARGS``: run the module as ``__main__`` with those arguments."""
    sys.argv = [name, *args]
    runpy.run_module(name, run_name="__main__", alter_sys=True)
    return 0


def _give_streams_somewhere() -> None:
    """A windowed program (``localllm-app`` on Windows) has no console: what it prints goes to
    ``<log dir>/localllm-app.log`` instead of nowhere, and the first log line cannot crash it."""
    if sys.stdout is not None and sys.stderr is not None:
        return
    try:
        from localllm.daemon.settings import Settings

        log_dir = Settings.from_env().log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        stream = open(log_dir / "localllm-app.log", "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    except (OSError, ValueError):
        stream = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    sys.stdout = sys.stdout or stream
    sys.stderr = sys.stderr or stream


if __name__ == "__main__":
    sys.exit(main())
