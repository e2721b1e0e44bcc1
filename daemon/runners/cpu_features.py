"""Which instruction sets a llama.cpp build uses, and which of them this CPU does not list.

llama.cpp reports the sets its CPU code was compiled for in its system info line
(``CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 |``); Linux lists what the processor
offers in ``/proc/cpuinfo``. A set the build uses and the CPU does not list crashes the runner
with SIGILL the first time that code runs, so ``localllm doctor`` names it before that happens.
(The reverse, a set listed but broken under a hypervisor, only running it shows: the build
self-test, :mod:`localllm.daemon.runners.selftest`.)
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_features", "cpu_flags", "missing_from_cpu"]

# llama.cpp's name for a set -> the flag /proc/cpuinfo lists for it
_CPUINFO_FLAG = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "AVX_VNNI": "avx_vnni",
    "FMA": "fma",
    "F16C": "f16c",
    "BMI2": "bmi2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}


def build_features(system_info: str) -> list[str]:
    """The sets switched on in a system info line, in its order (``AVX2 = 1`` -> ``AVX2``)."""
    found = []
    for piece in system_info.split("|"):
        name, _, value = piece.rpartition(":")[2].partition("=")
        if name.strip() and value.strip() not in ("", "0"):
            found.append(name.strip())
    return found


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first processor's ``flags`` on Linux; empty where there is no such file."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):  # x86, Arm
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def missing_from_cpu(features: list[str], flags: frozenset[str]) -> list[str]:
    """The x86 sets among ``features`` that ``flags`` does not list; none when the flags are
    unknown (another system) or are not x86's."""
    if "avx" not in flags and "pni" not in flags:
        return []
    return [name for name in features if name in _CPUINFO_FLAG and _CPUINFO_FLAG[name] not in flags]
