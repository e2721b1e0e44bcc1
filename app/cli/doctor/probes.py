"""How ``localllm doctor`` looks at this computer: each probe returns data and never raises.

The llama.cpp build is asked in a subprocess (``python -m localllm.daemon.runners.selftest``, with
this program's own ``sys.executable``, which is the bundle in a frozen install): it reports what the
build supports and proves that it runs here, by loading tiny models in real runners. A broken
native library, or one built for another CPU, then shows up as a finding instead of killing
the doctor. Commands go through
``run``/``which`` parameters so tests can hand in the outputs of tools this machine lacks.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from localllm import daemon
from localllm.app.cli.doctor.report import Gpu, LlamaBuild, Memory, StoreState

__all__ = [
    "Run",
    "apple_gpu",
    "llama_build",
    "memory",
    "nvidia_gpus",
    "parse_meminfo",
    "parse_nvidia_smi",
    "parse_vm_stat",
    "run_command",
    "store_state",
]

Run = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]
SELFTEST_MODULE = "localllm.daemon.runners.selftest"
_NVIDIA_QUERY = "--query-gpu=name,memory.total,memory.free,driver_version"
_MIB = 1 << 20
_PACKAGE_ROOT = Path(daemon.__file__).resolve().parents[1]  # where the package was installed from


def run_command(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, cwd=_PACKAGE_ROOT
    )


def llama_build(run: Run = run_command, timeout: float = 300.0) -> LlamaBuild:
    """What the build supports, and whether its runners work here (the self-test)."""
    try:
        result = run([sys.executable, "-m", SELFTEST_MODULE], timeout)
    except (OSError, subprocess.SubprocessError) as error:
        return LlamaBuild(error=f"the self-test did not run: {error}")
    if result.returncode < 0:  # the self-test itself killed: it loads no native code
        return LlamaBuild(error=f"the self-test crashed ({_signal_name(-result.returncode)})")
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        lines = [line for line in (result.stderr or "").splitlines() if line.strip()]
        return LlamaBuild(error=lines[-1].strip() if lines else f"status {result.returncode}")
    build = found.get("build") or {}
    if "error" in build and not found.get("exit_signal"):  # the library does not even load
        return LlamaBuild(error=build["error"])
    return LlamaBuild(
        version=build.get("llama_cpp_version"),
        supports_gpu_offload=build.get("supports_gpu_offload"),
        backend=build.get("backend"),
        system_info=build.get("system_info"),
        library_dir=build.get("library_dir"),
        runs_here=bool(found.get("ok")),
        failed_step=found.get("failed_step"),
        exit_signal=found.get("exit_signal"),
        failure=found.get("message"),
        missing_from_cpu=tuple(found.get("missing_from_cpu") or ()),
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def nvidia_gpus(
    run: Run = run_command, which: Callable[[str], str | None] = shutil.which
) -> list[Gpu]:
    exe = which("nvidia-smi")
    if exe is None:
        return []
    try:
        result = run([exe, _NVIDIA_QUERY, "--format=csv,noheader,nounits"], 10.0)
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_nvidia_smi(result.stdout) if result.returncode == 0 else []


def parse_nvidia_smi(output: str) -> list[Gpu]:
    """``name, total MiB, free MiB, driver`` lines (a name may hold commas)."""
    gpus = []
    for line in output.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) < 4 or not (parts[-3].isdigit() and parts[-2].isdigit()):
            continue
        name = ",".join(parts[:-3])
        total, free = int(parts[-3]) * _MIB, int(parts[-2]) * _MIB
        gpus.append(Gpu(name, "nvidia", total, free, parts[-1] or None))
    return gpus


def apple_gpu(system: str, machine: str, run: Run = run_command) -> list[Gpu]:
    """Apple silicon's GPU (Metal), which shares the computer's memory."""
    if system != "Darwin" or machine != "arm64":
        return []
    try:
        chip = run(["sysctl", "-n", "machdep.cpu.brand_string"], 5.0).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        chip = ""
    return [Gpu(f"{chip or 'Apple silicon'} GPU (Metal)", "apple")]


def memory(system: str | None = None, run: Run = run_command) -> Memory:
    """Total and available RAM: /proc/meminfo, sysctl + vm_stat on macOS, the Win32 API."""
    system = system or platform.system()
    try:
        if system == "Linux":
            return parse_meminfo(Path("/proc/meminfo").read_text())
        if system == "Darwin":
            total = int(run(["sysctl", "-n", "hw.memsize"], 5.0).stdout.strip())
            return Memory(total, parse_vm_stat(run(["vm_stat"], 5.0).stdout))
        if system == "Windows":
            return _windows_memory()
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return Memory(None, None)


def parse_meminfo(text: str) -> Memory:
    fields = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if rest.split():
            fields[key] = int(rest.split()[0]) * 1024
    return Memory(fields.get("MemTotal"), fields.get("MemAvailable", fields.get("MemFree")))


def parse_vm_stat(text: str) -> int | None:
    """Free, inactive and speculative pages: what macOS hands out without swapping."""
    lines = text.splitlines()
    if not lines or "page size of" not in lines[0]:
        return None
    page = int(lines[0].split("page size of")[1].split()[0])
    pages = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        if value.strip().rstrip(".").isdigit():
            pages[key.strip()] = int(value.strip().rstrip("."))
    wanted = ("Pages free", "Pages inactive", "Pages speculative")
    return sum(pages.get(key, 0) for key in wanted) * page


def _windows_memory() -> Memory:
    import ctypes

    class Status(ctypes.Structure):
        _fields_ = [("length", ctypes.c_ulong), ("load", ctypes.c_ulong)] + [
            (name, ctypes.c_ulonglong)
            for name in ("total", "available", "page_total", "page_free", "virtual", "vfree")
        ] + [("extended", ctypes.c_ulonglong)]  # fmt: skip

    status = Status(length=ctypes.sizeof(Status))
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]
        return Memory(None, None)
    return Memory(status.total, status.available)


def store_state(path: Path) -> StoreState:
    """Where the models go: does it exist, can we write there, how much room is on its disk."""
    existing = path
    total: int | None
    free: int | None
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        usage = shutil.disk_usage(existing)
        total, free = usage.total, usage.free
    except OSError:
        total = free = None
    writable = os.access(existing, os.W_OK | os.X_OK)
    return StoreState(path, path.is_dir(), writable, total, free)
