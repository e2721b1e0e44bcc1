"""``python installers/llama_build.py [--portable] [--cpu] [--json] [--install | --ensure]``.

llama-cpp-python compiles llama.cpp when it is installed, for one GPU stack chosen by CMake
flags (``CMAKE_ARGS``). This looks at what is installed (Metal on Apple silicon; else the CUDA
toolkit, ROCm/HIP, or Vulkan with its shader compiler) and prints the flags for the best one,
with this CPU's instruction sets; ``--install`` rebuilds llama-cpp-python (the version
pyproject.toml pins) with them. ``--portable`` builds for other computers: on x86-64 the CPU
code then needs AVX2 (2013 and later) instead of exactly this CPU's features (this one may have
AVX-512).

Every build is proved before it is kept: ``--install`` and ``--ensure`` (which ``./dev`` runs
after installing) run the build's self-test and, when a runner dies by a signal, rebuild
without AMX, then AVX-512, then portably (``llama_fit``). ``--forget`` drops what was learned
about this computer first (to try the native build again after a hypervisor update).

Detection takes ``which`` and ``run`` callables, so its table is tested with fake tool output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import llama_fit  # beside this script (installers/ is on sys.path when it runs)

__all__ = ["Build", "Toolchain", "cpu_summary", "detect", "main", "pinned_version"]

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

Which = Callable[[str], str | None]
Run = Callable[[Sequence[str]], str | None]  # stdout, or None when the command fails


@dataclass(frozen=True)
class Build:
    backend: str  # metal, cuda, rocm, vulkan, cpu
    cmake_args: tuple[str, ...]
    reason: str
    env: dict[str, str] = field(default_factory=dict)  # more than CMAKE_ARGS (ROCm's compiler)
    notes: tuple[str, ...] = ()  # GPU stacks seen but not buildable, and why


@dataclass(frozen=True)
class Toolchain:
    """How ``detect`` sees the computer: the platform, and ``which``/``run`` for its tools."""

    system: str  # platform.system()
    machine: str  # platform.machine()
    which: Which
    run: Run


def detect(tools: Toolchain, *, portable: bool = False, cpu: bool = False) -> Build:
    """The build to use: Metal, then CUDA, ROCm, Vulkan; the CPU when none can be built.

    For this computer (the default) a GPU stack counts when both its GPU and its toolkit are
    here. ``portable`` builds for other computers: the toolkit is enough, and the CPU code
    targets the architecture's baseline instead of this CPU. ``cpu`` skips the GPU stacks
    (the CPU installer built on a computer that has CUDA).
    """
    notes: list[str] = []
    if cpu:
        off = ("-DGGML_METAL=off",) if tools.system == "Darwin" else ()
        return Build("cpu", off + (("-DGGML_NATIVE=OFF",) if portable else ()), "as asked")
    build = (
        _metal(tools)
        or _cuda(tools, portable, notes)
        or _rocm(tools, portable, notes)
        or _vulkan(tools, portable, notes)
        or Build("cpu", (), "no GPU that llama.cpp can be built for")
    )
    args = build.cmake_args + (("-DGGML_NATIVE=OFF",) if portable else ())
    return Build(build.backend, args, build.reason, build.env, tuple(notes))


def _metal(tools: Toolchain) -> Build | None:
    if tools.system != "Darwin":
        return None
    if tools.machine == "arm64":
        return Build("metal", ("-DGGML_METAL=on",), "Apple silicon")
    # llama.cpp turns Metal on for every Mac; its kernels are written for Apple silicon.
    return Build("cpu", ("-DGGML_METAL=off",), "an Intel Mac: the CPU build")


def _cuda(tools: Toolchain, portable: bool, notes: list[str]) -> Build | None:
    gpu = _first_line(tools.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]))
    nvcc = tools.which("nvcc") or next(filter(tools.which, _NVCC_PLACES), None)
    found = re.search(r"release (\d+\.\d+)", (nvcc and tools.run([nvcc, "--version"])) or "")
    if found and (gpu or portable):
        reason = f"CUDA {found.group(1)}" + (f" for the {gpu}" if gpu else ", for other computers")
        args = ("-DGGML_CUDA=on",)
        archs = () if portable else _cuda_architectures(tools)
        if archs:  # this card's kernels only: minutes to compile instead of an hour
            args += (f"-DCMAKE_CUDA_ARCHITECTURES={';'.join(archs)}",)
            reason += f", kernels for sm_{', sm_'.join(archs)} only"
        return Build("cuda", args, reason)
    if found:
        notes.append(f"CUDA {found.group(1)} is installed but no NVIDIA GPU answers here")
    elif gpu:
        notes.append(f"an {gpu} is here but not the CUDA toolkit (nvcc) to build for it")
    return None


def _cuda_architectures(tools: Toolchain) -> tuple[str, ...]:
    """The GPUs' compute capabilities as CMake names them ("8.9" -> "89"); none when the driver
    is too old to say (llama.cpp then builds its default list)."""
    answer = tools.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]) or ""
    found = {line.strip().replace(".", "") for line in answer.splitlines()}
    return tuple(sorted(cap for cap in found if cap.isdigit()))


def _rocm(tools: Toolchain, portable: bool, notes: list[str]) -> Build | None:
    if not tools.which("hipconfig"):
        return None
    root = (tools.run(["hipconfig", "-R"]) or "").strip()
    clang = (tools.run(["hipconfig", "-l"]) or "").strip()
    targets = sorted(set(re.findall(r"\bgfx[0-9a-f]+\b", tools.run(["rocminfo"]) or "")))
    if not (root and clang):
        notes.append("hipconfig does not report where ROCm is")
        return None
    if not (targets or portable):
        notes.append("ROCm is installed but rocminfo lists no AMD GPU here")
        return None
    args = ("-DGGML_HIP=on",) + ((f"-DAMDGPU_TARGETS={';'.join(targets)}",) if targets else ())
    reason = f"ROCm for {', '.join(targets)}" if targets else "ROCm, for other computers"
    return Build("rocm", args, reason, {"HIPCXX": f"{clang}/clang", "HIP_PATH": root})


def _vulkan(tools: Toolchain, portable: bool, notes: list[str]) -> Build | None:
    summary = tools.run(["vulkaninfo", "--summary"])
    if summary is None:
        return None
    kinds = re.findall(r"deviceType\s*=\s*PHYSICAL_DEVICE_TYPE_(\w+)", summary)
    names = [name.strip() for name in re.findall(r"deviceName\s*=\s*(.+)", summary)]
    gpus = [name for kind, name in zip(kinds, names, strict=False) if kind != "CPU"]
    if not (gpus or portable):
        notes.append("Vulkan sees no GPU here (only a software renderer)")
        return None
    if not tools.which("glslc"):
        notes.append("Vulkan is here but not glslc (shaderc), which builds its shaders")
        return None
    reason = f"Vulkan on the {gpus[0]}" if gpus else "Vulkan, for other computers"
    return Build("vulkan", ("-DGGML_VULKAN=on",), reason)


_NVCC_PLACES = ("/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc")


def _first_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[0] if lines else ""


def pinned_version(pyproject: Path = PYPROJECT) -> str:
    """The llama-cpp-python version the project pins (``llama-cpp-python==X``)."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    for requirement in dependencies:
        name, _, pinned = requirement.partition("==")
        if name.strip().lower().replace("_", "-") == "llama-cpp-python" and pinned:
            return pinned.strip()
    raise SystemExit(f"llama_build: {pyproject} does not pin llama-cpp-python==VERSION")


def _system_tools() -> Toolchain:
    def run(argv: Sequence[str]) -> str | None:
        exe = shutil.which(argv[0])
        if exe is None:
            return None
        try:
            done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    return Toolchain(platform.system(), platform.machine(), shutil.which, run)


def cpu_summary(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """This CPU and the instruction sets a native build may use, for logs (CI's first lines)."""
    model, flags = platform.processor() or platform.machine(), []
    try:
        first = cpuinfo.read_text(errors="replace").split("\n\n")[0]
    except OSError:
        return model
    for line in first.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            model = value.strip()
        elif key.strip() in ("flags", "Features"):
            flags = [flag for flag in value.split() if flag.startswith(_SIMD_FLAGS)]
    return f"{model}; SIMD flags: {' '.join(flags) or 'none listed'}"


_SIMD_FLAGS = ("sse", "ssse3", "pni", "avx", "fma", "f16c", "bmi2", "amx", "asimd", "sve", "neon")


def _installed_backend(python: str) -> str | None:
    """The backend the installed build was compiled for, asked in a child; None if unknown."""
    probe = [python, "-m", "localllm.daemon.runners.worker.probe"]
    done = subprocess.run(probe, capture_output=True, text=True, cwd=PYPROJECT.parent)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])["backend"]
    except (ValueError, IndexError, KeyError):
        return None


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python installers/llama_build.py",
        description="Choose llama-cpp-python's build (CMAKE_ARGS) for this computer's GPU.",
    )
    parser.add_argument("--portable", action="store_true", help="build for other computers")
    parser.add_argument("--cpu", action="store_true", help="the CPU build, whatever GPU is here")
    parser.add_argument("--json", action="store_true", help="print the choice as JSON")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--install", action="store_true", help="rebuild llama-cpp-python")
    what.add_argument(
        "--ensure", action="store_true", help="prove the installed build runs here, else rebuild"
    )
    parser.add_argument(
        "--forget", action="store_true", help="forget which builds ran on this computer"
    )
    args = parser.parse_args(argv)
    # --ensure keeps the backend the installed build has (pip's default compile is the CPU's)
    keep_cpu = args.ensure and _installed_backend(sys.executable) in ("cpu", None)
    build = detect(_system_tools(), portable=args.portable, cpu=args.cpu or keep_cpu)
    cmake_args = " ".join(build.cmake_args)
    if args.json:
        print(json.dumps({**asdict(build), "CMAKE_ARGS": cmake_args}, indent=2))
    elif args.install or args.ensure:
        reason = "the installed build's" if keep_cpu and not args.cpu else build.reason
        print(f"llama.cpp build: backend {build.backend} ({reason}), CMAKE_ARGS={cmake_args!r}")
        print(f"llama.cpp build: CPU {cpu_summary()}")
    else:
        print(f"backend: {build.backend} ({build.reason})")
        print(f"cpu: {cpu_summary()}")
        for note in build.notes:
            print(f"note: {note}")
        exports = {**build.env, "CMAKE_ARGS": cmake_args}
        shell = "$env:{} = {}" if os.name == "nt" else "export {}={}"  # PowerShell, else sh
        print("\n".join(shell.format(key, json.dumps(value)) for key, value in exports.items()))
    if not (args.install or args.ensure):
        return 0
    environ = os.environ if environ is None else environ
    env = {**environ, **build.env, "CMAKE_ARGS": cmake_args, "FORCE_CMAKE": "1"}
    env.pop("SOURCE_DATE_EPOCH", None)  # with it set, ggml builds without any SIMD at all
    cache = llama_fit.build_cache(sys.executable, environ)
    record = llama_fit.Record(cache / "records.json", llama_fit.machine_key())
    if args.forget:
        record.forget()
    box = llama_fit.system_toolbox(pinned_version(), env, cache)
    if args.install:
        llama_fit.climb(box, record, [llama_fit.NATIVE])
    else:
        llama_fit.ensure(box, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
