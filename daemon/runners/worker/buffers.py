"""llama.cpp's own figures for the memory it allocates, read off its log as it loads.

Every buffer llama.cpp allocates is printed at load, at info level, which the runner otherwise
drops: ``load_tensors: CPU_Mapped model buffer size = 235.16 MiB``, ``CPU_REPACK`` for
weights repacked for this CPU, ``llama_kv_cache: CPU KV buffer size = 48.00 MiB`` once per
cache (a sliding-window model has two: the full-attention layers' and the window's, announced
by ``creating non-SWA`` / ``creating SWA KV cache``), ``RS buffer size`` for a recurrent
state, ``output buffer size`` and ``sched_reserve: CPU compute buffer size``. These are what a
memory plan answers to (``daemon.scheduler`` keeps them and checks its estimate against them).

Which load a line belongs to (the model, its generation context, an embedding context, a draft
model, a vision projector) is known to the runner, not to the line: the runner names the
``part`` before each, and lines count toward it. A buffer printed again for the same part and
device (llama.cpp reserves the compute graph anew) replaces the last figure.
"""

from __future__ import annotations

import re

from ..types import BufferKind, BufferPart, LlamaBuffer

__all__ = ["BufferLedger"]

# "<device> <kind> buffer size = <n> MiB": model, KV, RS, output, compute (a LoRA's too)
_BUFFER = re.compile(
    r"(?P<device>[A-Za-z][\w.-]*)\s+(?P<kind>model|KV|RS|output|compute|LoRA)\s+buffer size\s*"
    r"=\s*(?P<mib>\d+(?:\.\d+)?)\s*MiB"
)
_WINDOW = re.compile(r"creating\s+(?P<which>non-SWA|SWA)\s+KV cache")
_KINDS: dict[str, BufferKind] = {"model": "weights", "KV": "kv", "RS": "recurrent"}
_KINDS |= {"output": "output", "compute": "compute", "LoRA": "lora"}
_MIB = 1 << 20


class BufferLedger:
    """Collects the buffers llama.cpp announces, for the part the runner is loading."""

    def __init__(self) -> None:
        self.part: BufferPart = "model"
        self._window = False  # the KV cache being created is a sliding window's
        self._found: dict[tuple[BufferPart, str, BufferKind], int] = {}

    def read(self, line: str) -> None:
        """Take one log line (any: most say nothing about buffers)."""
        window = _WINDOW.search(line)
        if window is not None:
            self._window = window["which"] == "SWA"
            return
        found = _BUFFER.search(line)
        if found is None:
            return
        kind: BufferKind = _KINDS[found["kind"]]
        if kind == "kv" and self._window:
            kind = "window kv"
        size = round(float(found["mib"]) * _MIB)
        self._found[(self.part, found["device"], kind)] = size

    def begin(self, part: BufferPart) -> None:
        """Lines from now on belong to ``part``."""
        self.part = part
        self._window = False

    def buffers(self) -> tuple[LlamaBuffer, ...]:
        return tuple(LlamaBuffer(*key, size) for key, size in self._found.items())
