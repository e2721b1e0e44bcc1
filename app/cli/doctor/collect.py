"""Run every probe once and put the answers into one :class:`Report`.

The llama.cpp probe loads a native library in a child process (about a second), so it runs in
a thread while the cheap probes and the daemon query run here.
"""

from __future__ import annotations

import platform
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version

from localllm.app.cli.doctor.daemon_state import daemon_state
from localllm.app.cli.doctor.probes import apple_gpu, llama_build, memory, nvidia_gpus, store_state
from localllm.app.cli.doctor.report import Report
from localllm.daemon.settings import Settings

__all__ = ["collect"]


def collect(settings: Settings) -> Report:
    system, machine = platform.system(), platform.machine()
    with ThreadPoolExecutor(max_workers=1) as pool:
        llama = pool.submit(llama_build)
        gpus = (*nvidia_gpus(), *apple_gpu(system, machine))
        report_memory = memory(system)
        store = store_state(settings.models_dir)
        daemon = daemon_state(settings)
        build = llama.result()
    return Report(
        version=_version(),
        platform=_platform(system, machine),
        llama=build,
        gpus=gpus,
        memory=report_memory,
        store=store,
        dirs={"data": settings.data_dir, "config": settings.config_dir, "logs": settings.log_dir},
        daemon=daemon,
    )


def _version() -> str:
    try:
        return version("localllm")
    except PackageNotFoundError:
        return "(not installed)"


def _platform(system: str, machine: str) -> str:
    bundled = ", app bundle" if getattr(sys, "frozen", False) else ""
    return f"{system} {machine}, Python {platform.python_version()}{bundled}"
