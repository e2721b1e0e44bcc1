"""``python -m localllm.daemon.runners.worker.quantize IN OUT TYPE``: requantize a GGUF with
llama.cpp.

It runs as its own process, like a runner, so a crash or a native abort on a hostile file
never takes the daemon down, and ``llama_cpp`` stays inside the worker package. Exit codes:
0 done, 2 bad arguments (unknown type), 1 llama.cpp refused the file. The last stderr line
says why, in words that name no directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["QUANT_TYPES", "main", "quantize"]

#: The target types a user may ask for (Ollama's spelling, case-insensitive).
QUANT_TYPES: tuple[str, ...] = (
    "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S",
    "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "F16", "BF16",
)  # fmt: skip


def quantize(source: Path, destination: Path, quant: str, threads: int = 0) -> None:
    """Write ``source`` quantized to ``quant`` at ``destination``; ValueError on refusal."""
    import llama_cpp as lc

    ftype = getattr(lc, f"LLAMA_FTYPE_MOSTLY_{quant.upper()}", None)
    if quant.upper() not in QUANT_TYPES or ftype is None:
        raise ValueError(f"unsupported quantization type {quant!r}")
    params = lc.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads or (os.cpu_count() or 1)
    params.allow_requantize = True
    code = lc.llama_model_quantize(str(source).encode(), str(destination).encode(), params)
    if code != 0:
        raise ValueError(f"llama.cpp could not quantize {source.name} to {quant.upper()}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(
            "usage: python -m localllm.daemon.runners.worker.quantize IN OUT TYPE", file=sys.stderr
        )
        return 2
    source, destination, quant = Path(args[0]), Path(args[1]), args[2]
    if quant.upper() not in QUANT_TYPES:
        print(f"unsupported quantization type {quant!r}", file=sys.stderr)
        return 2
    try:
        quantize(source, destination, quant)
    except ValueError as error:
        print(str(error), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
