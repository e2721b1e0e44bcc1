"""``python -m localllm.daemon.runners.worker.probe``: print what the installed llama.cpp build
supports.

Front ends may not import ``llama_cpp`` (a bad native build must never crash them), so
``localllm doctor`` runs this in a subprocess with its own interpreter and reads one JSON object:
``llama_cpp_version``, ``supports_gpu_offload``, ``system_info`` (llama.cpp's feature line),
``backend`` (cpu, cuda, metal, vulkan, rocm or gpu) and ``library_dir``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["backend_of", "main", "probe"]

# Names llama.cpp's system info line gives each GPU backend it was built with.
_BACKENDS: tuple[tuple[str, str], ...] = (
    ("CUDA", "cuda"), ("METAL", "metal"), ("HIP", "rocm"), ("ROCM", "rocm"),
)  # fmt: skip
_BACKENDS += (("VULKAN", "vulkan"),)


def backend_of(system_info: str, supports_gpu_offload: bool) -> str:
    """The GPU backend a build was compiled with, or ``cpu`` when it cannot offload."""
    if not supports_gpu_offload:
        return "cpu"
    upper = system_info.upper()
    return next((name for key, name in _BACKENDS if key in upper), "gpu")


def probe() -> dict[str, object]:
    import llama_cpp as lc

    offload = bool(lc.llama_supports_gpu_offload())
    system_info = lc.llama_print_system_info().decode(errors="replace").strip()
    return {
        "llama_cpp_version": getattr(lc, "__version__", "unknown"),
        "supports_gpu_offload": offload,
        "system_info": system_info,
        "backend": backend_of(system_info, offload),
        "library_dir": str(Path(lc.__file__).resolve().parent / "lib"),
    }


def main() -> int:
    json.dump(probe(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
