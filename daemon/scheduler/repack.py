"""Which weight types llama.cpp's CPU backend repacks on this CPU: a second copy in RAM.

For the matrices its CPU kernels multiply fastest in an interleaved layout, llama.cpp copies a
weight out of the mapped file into a ``CPU_REPACK`` buffer at load (ggml's
``ggml_repack_get_optimal_repack_type``): on x86 with AVX2, Q4_0, Q4_K, IQ4_NL and MXFP4 (and
Q2_K with AVX-512); on Arm with dot-product instructions, those and Q5_K, Q6_K and Q8_0. The
mapped pages of a repacked weight are read once and left, so a Q4_0 model's weights take their
size again in RAM. Which types, is decided by the CPU's flags; a build without the repacking
code repacks nothing, which the figures measured at the first load correct (``measured``).
"""

from __future__ import annotations

from localllm.daemon.runners.cpu_features import cpu_flags

__all__ = ["repacked_types"]

_X86 = frozenset({"Q4_0", "Q4_K", "IQ4_NL", "MXFP4"})
_ARM = _X86 | {"Q5_K", "Q6_K", "Q8_0"}


def repacked_types(flags: frozenset[str] | None = None) -> frozenset[str]:
    """The ggml types llama.cpp repacks on a CPU with these ``/proc/cpuinfo`` flags (this
    one's if None; none where they are unknown)."""
    flags = cpu_flags() if flags is None else flags
    if "avx2" in flags:
        return _X86 | ({"Q2_K"} if "avx512f" in flags else frozenset())
    if "asimddp" in flags:  # Arm's dot product
        return _ARM
    return frozenset()
