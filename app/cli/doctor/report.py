"""What ``localllm doctor`` found, as frozen data, and the problems that data shows.

The probes (:mod:`localllm.app.cli.doctor.probes`) fill a :class:`Report`; :func:`findings` judges
it and the renderer only formats. Keeping the judging apart from both means every rule is a plain
function of data, tested without a GPU, a daemon or a second machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOW_DISK_BYTES",
    "DaemonState",
    "Finding",
    "Gpu",
    "LlamaBuild",
    "Memory",
    "Report",
    "StoreState",
    "findings",
    "store_agrees",
]

LOW_DISK_BYTES = 5 * 1000**3  # less than one 7B model at Q4_K_M
_REBUILD = "python installers/llama_build.py --install (or install the matching bundle)"
_REBUILD_HERE = f"rebuild it for this computer: {_REBUILD}"


@dataclass(frozen=True, slots=True)
class LlamaBuild:
    """What the installed llama-cpp-python can do, and whether it runs here, from its
    self-test (``daemon.runners.selftest``)."""

    version: str | None = None
    supports_gpu_offload: bool | None = None
    backend: str | None = None
    system_info: str | None = None
    library_dir: str | None = None
    error: str | None = None  # the build does not load at all
    runs_here: bool | None = None  # every step of the self-test ran; None: not tested
    failed_step: str | None = None  # the step that failed ("Q8_0: embedding"...)
    exit_signal: str | None = None  # the signal that killed the self-test's runner, if one did
    failure: str | None = None  # the self-test's error message
    missing_from_cpu: tuple[str, ...] = ()  # instruction sets built in that this CPU lacks


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    vendor: str  # nvidia, apple
    memory_total: int | None = None  # None: shared with the CPU (Apple silicon)
    memory_free: int | None = None
    driver: str | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    total: int | None
    available: int | None


@dataclass(frozen=True, slots=True)
class StoreState:
    path: Path
    exists: bool
    writable: bool
    disk_total: int | None = None
    disk_free: int | None = None


@dataclass(frozen=True, slots=True)
class DaemonState:
    url: str
    running: bool
    local: bool = True  # on this machine's loopback: its paths are this machine's paths
    version: str | None = None
    models_dir: str | None = None  # as the daemon reports it; None when it does not say
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Report:
    version: str
    platform: str
    llama: LlamaBuild
    gpus: tuple[Gpu, ...]
    memory: Memory
    store: StoreState
    dirs: dict[str, Path]  # data, config, logs
    daemon: DaemonState


@dataclass(frozen=True, slots=True)
class Finding:
    level: str  # "error": something is broken (exit 1); "warning": works, could be better
    message: str


def store_agrees(report: Report) -> bool | None:
    """Whether the daemon serves the store this shell would use; None when that is unknown."""
    daemon = report.daemon
    if not daemon.running or not daemon.local or not daemon.models_dir:
        return None
    return _same_path(Path(daemon.models_dir), report.store.path)


def findings(report: Report) -> list[Finding]:
    found = [*_llama_findings(report), *_store_findings(report.store)]
    daemon = report.daemon
    if daemon.error:
        found.append(Finding("error", daemon.error))
    if store_agrees(report) is False:
        found.append(
            Finding(
                "error",
                f"the daemon serves the models in {daemon.models_dir}, but this shell would "
                f"use {report.store.path}: give both the same LOCALLLM_MODELS and restart the "
                "daemon (docs/install.md: Moving the model store)",
            )
        )
    return found


def _llama_findings(report: Report) -> list[Finding]:
    llama = report.llama
    if llama.error:
        return [Finding("error", f"llama.cpp does not load: {llama.error}; reinstall: {_REBUILD}")]
    found = [*_runs_here_findings(llama)]
    usable = [gpu for gpu in report.gpus if gpu.vendor in ("nvidia", "apple")]
    if usable and llama.supports_gpu_offload is False:
        found.append(
            Finding(
                "warning",
                f"this llama.cpp build runs on the CPU only, so the {usable[0].name} is not "
                f"used; install a GPU build: {_REBUILD}",
            )
        )
    return found


def _runs_here_findings(llama: LlamaBuild) -> list[Finding]:
    """The build against this machine: instruction sets it uses that the CPU lacks (known
    without running it), and what its self-test's runners did."""
    found = []
    if llama.missing_from_cpu:
        sets = ", ".join(llama.missing_from_cpu)
        found.append(
            Finding(
                "error",
                f"this llama.cpp build uses CPU instructions this computer does not have "
                f"({sets}): {_REBUILD_HERE}",
            )
        )
    if llama.exit_signal == "SIGILL":
        found.append(
            Finding(
                "error",
                f"this llama.cpp build uses CPU instructions this computer cannot run: its "
                f"self-test was killed by SIGILL ({llama.failed_step}); {_REBUILD_HERE}",
            )
        )
    elif llama.runs_here is False:
        how = f"was killed by {llama.exit_signal}" if llama.exit_signal else "failed"
        found.append(
            Finding(
                "error",
                f"llama.cpp's self-test {how} ({llama.failed_step}): {llama.failure}; "
                f"{_REBUILD_HERE}",
            )
        )
    return found


def _store_findings(store: StoreState) -> list[Finding]:
    if not store.writable:
        return [Finding("error", f"the model store {store.path} cannot be written to")]
    if store.disk_free is not None and store.disk_free < LOW_DISK_BYTES:
        free = f"{store.disk_free / 1000**3:.1f} GB"
        return [Finding("warning", f"only {free} free for models on the store's disk")]
    return []


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.expanduser().resolve()
    except OSError:
        return a == b
