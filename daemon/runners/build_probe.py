"""What the installed llama.cpp build was compiled for, asked of a child process.

Only the runner worker imports ``llama_cpp`` (a build made for another CPU must never crash the
daemon), so ``python -m localllm.daemon.runners.worker.probe`` answers in a child. The self-test
reads it first; the daemon asks once (``BuildProbe``) to tell front ends when a GPU sits unused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

__all__ = ["BuildProbe", "probe_build"]

_PROBE_MODULE = "localllm.daemon.runners.worker.probe"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # holds the ``daemon`` package


async def probe_build(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The probe's report (``llama_cpp_version``, ``backend``, ``system_info``...); on failure
    ``{"error": ...}`` with the last line the child wrote, or the signal that killed it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", _PROBE_MODULE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=_PACKAGE_ROOT, env=None if env is None else dict(env),
    )  # fmt: skip
    out, err = await proc.communicate()
    if proc.returncode == 0:
        with contextlib.suppress(ValueError, IndexError):
            return cast("dict[str, Any]", json.loads(out.decode().strip().splitlines()[-1]))
    if proc.returncode is not None and proc.returncode < 0:
        return {"error": f"loading llama.cpp was killed by {signal_name(-proc.returncode)}"}
    lines = [line.strip() for line in err.decode(errors="replace").splitlines() if line.strip()]
    return {"error": lines[-1] if lines else f"the build's probe failed (status {proc.returncode})"}


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class BuildProbe:
    """The probe's report, asked on first use and kept (the build does not change under a
    running daemon); concurrent callers share the one child."""

    def __init__(self, env: Mapping[str, str] | None):
        self._env = env
        self._report: asyncio.Task[dict[str, Any]] | None = None

    async def report(self) -> dict[str, Any]:
        if self._report is None:
            self._report = asyncio.ensure_future(probe_build(self._env))
        return await asyncio.shield(self._report)
