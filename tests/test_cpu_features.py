"""Which instruction sets a llama.cpp build uses (its system info line) and which of them a CPU
does not list (``/proc/cpuinfo``): what ``localllm doctor`` reports before anything runs."""

from __future__ import annotations

from localllm.daemon.runners.cpu_features import build_features, cpu_flags, missing_from_cpu

SAPPHIRE_RAPIDS_BUILD = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
    "AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
)
ZEN3_FLAGS = "fpu sse sse2 pni ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi1 bmi2 sha_ni vaes"


def cpuinfo(tmp_path, flags: str):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\n")
    return path


def test_the_sets_a_build_switched_on():
    assert build_features("CPU : SSE3 = 1 | AVX = 1 | AVX2 = 0 | F16C = 1 |") == [
        "SSE3", "AVX", "F16C",
    ]  # fmt: skip
    assert build_features("CUDA : ARCHS = 890 | USE_GRAPHS = 1 | CPU : AVX2 = 1 |") == [
        "ARCHS", "USE_GRAPHS", "AVX2",
    ]  # fmt: skip
    assert build_features("") == []


def test_a_build_for_a_newer_cpu_names_what_this_one_lacks(tmp_path):
    flags = cpu_flags(cpuinfo(tmp_path, ZEN3_FLAGS))
    assert {"avx2", "pni", "bmi2"} <= flags
    features = build_features(SAPPHIRE_RAPIDS_BUILD)
    assert missing_from_cpu(features, flags) == [
        "AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8",
    ]  # fmt: skip
    own = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | FMA = 1 | LLAMAFILE = 1 |"
    assert missing_from_cpu(build_features(own), flags) == []


def test_a_cpu_that_lists_amx_has_nothing_missing_though_amx_may_still_trap(tmp_path):
    """Listed is not usable: a hypervisor may list AMX and trap it; only the self-test tells."""
    listed = ZEN3_FLAGS + " avx_vnni avx512f avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8"
    flags = cpu_flags(cpuinfo(tmp_path, listed))
    assert missing_from_cpu(build_features(SAPPHIRE_RAPIDS_BUILD), flags) == []


def test_unknown_flags_claim_nothing(tmp_path):
    assert cpu_flags(tmp_path / "absent") == frozenset()
    assert missing_from_cpu(["AVX512"], frozenset()) == []
    arm = cpu_flags(cpuinfo(tmp_path, "fp asimd evtstrm aes pmull sha1 sha2 crc32"))
    assert missing_from_cpu(["NEON", "AVX2"], arm) == []
