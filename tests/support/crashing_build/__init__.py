"""Runners that die by a signal, as a llama.cpp build made for another CPU does (see the
``sitecustomize`` module here)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

__all__ = ["crashing_build"]

_HERE = Path(__file__).resolve().parent


def crashing_build(
    folder: Path, signal: str = "SIGILL", at: str = "batch", spare: str = "selftest-"
) -> dict[str, str]:
    """An environment (this process's, plus PYTHONPATH) whose runners die by ``signal`` ``at``
    the first batch decode, at start-up, or on loading a model file whose name lacks
    ``spare``; ``folder`` receives the hook and its settings."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(_HERE / "sitecustomize.py", folder / "sitecustomize.py")
    crash = {"signal": signal, "at": at, "spare": spare}
    (folder / "crash.json").write_text(json.dumps(crash))
    return with_python_path(os.environ, folder)


def with_python_path(env: Mapping[str, str], folder: Path) -> dict[str, str]:
    paths = [str(folder), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}
