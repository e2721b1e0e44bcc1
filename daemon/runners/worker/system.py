"""What the runner reports about itself: backend, offload, memory; and llama.cpp's log routing."""

from __future__ import annotations

import ctypes
import os
import sys

import llama_cpp as lc

from ..resident import resident_bytes
from ..types import RunnerInfo, RunnerSpec
from .buffers import BufferLedger
from .model import Model
from .offload import offloaded_layers

__all__ = ["LogRouter", "default_threads", "describe", "resident_bytes", "say"]

_BACKENDS = (("CUDA", "cuda"), ("METAL", "metal"), ("HIP", "rocm"), ("VULKAN", "vulkan"))
_WARN, _ERROR, _CONT = 3, 4, 5  # ggml_log_level


class LogRouter:
    """Sends llama.cpp's warnings and errors to stderr (the daemon keeps them as the runner log),
    and every line to ``ledger`` (the buffers it allocates are announced at info level).

    Info lines are dropped unless ``verbose``: a model load prints hundreds of them.
    """

    def __init__(self, verbose: bool = False, ledger: BufferLedger | None = None):
        self._verbose = verbose
        self._showing = False
        self.ledger = ledger or BufferLedger()
        self._line = ""  # a line llama.cpp has not ended yet
        self._callback = lc.llama_log_callback(self._log)  # must outlive the process's use
        lc.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _log(self, level: int, text: bytes, _user: int | None) -> None:
        if level != _CONT:
            self._showing = self._verbose or level in (_WARN, _ERROR)
        decoded = text.decode(errors="replace")
        if self._showing:
            sys.stderr.write(decoded)
            sys.stderr.flush()
        *ended, self._line = (self._line + decoded).split("\n")
        for line in ended:
            self.ledger.read(line)


def say(text: str) -> None:
    """One line of the runner's own in its log (stderr, which the daemon keeps)."""
    print(f"runner[{os.getpid()}]: {text}", file=sys.stderr, flush=True)


def default_threads() -> int:
    """Physical cores this process may run on: llama.cpp gains nothing from hyperthreads, and
    a thread per logical core makes its spinning barriers fight each other."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: no cheap way to see SMT siblings
        return os.cpu_count() or 1
    cores = set()
    for cpu in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
                cores.add(f.read().strip())
        except OSError:
            cores.add(str(cpu))
    return max(1, len(cores))


def _backend(system_info: str) -> str:
    if not lc.llama_supports_gpu_offload():
        return "cpu"
    upper = system_info.upper()
    return next((name for key, name in _BACKENDS if key in upper), "gpu")


def describe(
    spec: RunnerSpec, model: Model, load_seconds: float, ledger: BufferLedger | None = None
) -> RunnerInfo:
    """What the runner reports once ready, measured after load and warm-up (with llama.cpp's
    own buffer sizes where ``ledger`` collected them)."""
    system_info = lc.llama_print_system_info().decode(errors="replace").strip()
    total = model.n_layer + 1  # llama.cpp counts the output layer as one more
    gpu_layers = offloaded_layers(spec, model.n_layer)
    backend = _backend(system_info) if gpu_layers else "cpu"
    return RunnerInfo(
        backend=backend,
        gpu_layers=gpu_layers,
        total_layers=total,
        n_ctx=spec.num_ctx,
        n_ctx_train=model.n_ctx_train,
        n_parallel=spec.num_parallel,
        n_vocab=model.n_vocab,
        n_embd=model.n_embd_out,
        memory_bytes=resident_bytes(),
        vram_bytes=model.size_bytes * gpu_layers // total,
        pid=os.getpid(),
        load_seconds=load_seconds,
        system_info=system_info,
        flash_attention=model.attention,
        buffers=ledger.buffers() if ledger else (),
        **_expert_layers(spec, model),
    )


def _expert_layers(spec: RunnerSpec, model: Model) -> dict[str, int]:
    """How many layers hold experts, and of them how many keep them in RAM. The override
    counts layers from the first, as llama-server's ``--n-cpu-moe`` does, dense ones too (a
    DeepSeek-style model's first layers have no experts)."""
    if not model.n_expert:
        return {"expert_layers": 0, "cpu_expert_layers": 0}
    dense = model.leading_dense_layers
    covered = model.n_layer if spec.num_cpu_moe < 0 else min(spec.num_cpu_moe, model.n_layer)
    return {"expert_layers": model.n_layer - dense, "cpu_expert_layers": max(0, covered - dense)}
