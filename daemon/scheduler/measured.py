"""llama.cpp's own figures, kept per model and settings: what corrects the plan next time.

A runner reports the buffers llama.cpp allocated at load (``RunnerInfo.buffers``, read off its
log). The daemon keeps them in a small JSON file in its data folder, keyed by the model (its
shape's fingerprint, and its draft's, projector's and adapters') and the settings that decide
them (:func:`plan_key`), and a plan for the same model and settings takes them in place of its
own figures, marked "measured" (:func:`corrected`). The file is private (0600), replaced
atomically, bounded (:data:`MOST_ENTRIES`: the entries recorded longest ago are dropped
first; every load records its own again); one that cannot be read or parsed is ignored, and
the next load writes a good one.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from localllm.daemon.runners.types import LlamaBuffer
from localllm.daemon.scheduler.memory_plan import CPU, MemoryPlan, PlanPart, PlanSettings
from localllm.model_registry.model_shape import ModelShape
from localllm.model_registry.store.atomic import atomic_write_bytes

__all__ = [
    "MEASURED_FILE",
    "MOST_ENTRIES",
    "MeasuredBuffers",
    "corrected",
    "device_name",
    "plan_key",
]

MEASURED_FILE = "memory.json"
MOST_ENTRIES = 256
_MOST_BUFFERS = 64  # per entry: a load reports a dozen
_MOST_FILE_BYTES = 4 << 20
_VERSION = 1
# llama.cpp's kind of a buffer -> the plan's, by the part of the runner it was allocated for
_KINDS = {"weights", "kv", "window kv", "recurrent", "output", "compute", "lora"}
_WHOLE_PARTS = {"draft": "draft", "projector": "projector"}

log = logging.getLogger("localllm.scheduler")


def plan_key(shape: ModelShape, settings: PlanSettings) -> str:
    """What identifies a load's buffers: the model and its extras, and the settings that
    size them (not the CPU's repacking: the file is this machine's)."""
    extras = [settings.draft, settings.projector, *settings.loras]
    return json.dumps(
        [
            shape.fingerprint,
            [extra.fingerprint if extra else "" for extra in extras],
            settings.ctx_per_slot,
            settings.slots,
            settings.kv_type,
            settings.flash_attention,
            settings.batch,
            settings.gpu_layers,
            settings.cpu_moe_layers,
            settings.embedding,
            settings.draft_batch if settings.draft else 0,
            settings.draft_flash_attention if settings.draft else True,
        ],
        separators=(",", ":"),
    )


class MeasuredBuffers:
    """The file of measured buffers (``path`` None: kept in memory only)."""

    def __init__(self, path: Path | None):
        self._path = path
        self._lock = threading.Lock()  # records come from worker threads
        self._entries: dict[str, list[LlamaBuffer]] | None = None

    def lookup(self, key: str) -> tuple[LlamaBuffer, ...] | None:
        with self._lock:
            found = self._load().get(key)
            return tuple(found) if found else None

    def record(self, key: str, buffers: Iterable[LlamaBuffer]) -> None:
        """Keep what a load reported (a blocking write: call it from a worker thread)."""
        kept = [b for b in buffers if isinstance(b, LlamaBuffer)][:_MOST_BUFFERS]
        if not kept:
            return
        with self._lock:
            entries = self._load()
            entries.pop(key, None)
            entries[key] = kept  # the newest last: the oldest go first
            while len(entries) > MOST_ENTRIES:
                del entries[next(iter(entries))]
            self._save(entries)

    def _load(self) -> dict[str, list[LlamaBuffer]]:
        if self._entries is None:
            self._entries = _read(self._path) if self._path is not None else {}
        return self._entries

    def _save(self, entries: dict[str, list[LlamaBuffer]]) -> None:
        if self._path is None:
            return
        data = {
            "version": _VERSION,
            "entries": [[key, [list(_fields(b)) for b in found]] for key, found in entries.items()],
        }
        try:
            atomic_write_bytes(self._path, json.dumps(data).encode())
        except OSError as error:
            log.warning("could not keep the measured memory figures: %s", error.strerror)


def _fields(buffer: LlamaBuffer) -> tuple[str, str, str, int]:
    return buffer.part, buffer.device, buffer.kind, buffer.bytes


def _read(path: Path) -> dict[str, list[LlamaBuffer]]:
    """The file's entries; none where it is missing, too big or not what this module wrote."""
    try:
        if path.stat().st_size > _MOST_FILE_BYTES:
            return {}
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    listed = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(listed, list) or data.get("version") != _VERSION:
        return {}
    entries: dict[str, list[LlamaBuffer]] = {}
    for entry in listed[-MOST_ENTRIES:]:
        parsed = _entry(entry)
        if parsed is not None:
            entries[parsed[0]] = parsed[1]
    return entries


def _entry(entry: object) -> tuple[str, list[LlamaBuffer]] | None:
    if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
        return None
    buffers = []
    for item in entry[1][:_MOST_BUFFERS] if isinstance(entry[1], list) else []:
        if (
            isinstance(item, list)
            and len(item) == 4
            and all(isinstance(text, str) for text in item[:3])
            and isinstance(item[3], int)
            and not isinstance(item[3], bool)
            and item[3] >= 0
        ):
            buffers.append(LlamaBuffer(*item))
    return (entry[0], buffers) if buffers else None


def corrected(plan: MemoryPlan, buffers: Iterable[LlamaBuffer]) -> MemoryPlan:
    """``plan`` with llama.cpp's figures in place of its own for every kind they cover (the
    experts' share of the weights kept as planned: it is exact, from the tensors)."""
    measured: dict[tuple[str, str], int] = {}
    for buffer in buffers:
        kind = _WHOLE_PARTS.get(buffer.part) or (buffer.kind if buffer.kind in _KINDS else "")
        if kind:
            key = (kind, device_name(buffer.device))
            measured[key] = measured.get(key, 0) + buffer.bytes
    if not measured:
        return plan
    kinds = {kind for kind, _ in measured}
    kept = [p for p in plan.parts if p.kind not in kinds and not _is_weight(p, kinds)]
    experts = {p.device: p.bytes for p in plan.parts if p.kind == "experts"}
    parts = list(kept)
    for (kind, device), size in measured.items():
        if kind == "weights" and device in experts:
            share = min(size, experts.pop(device))
            parts.append(PlanPart("experts", device, share, "the experts' weights", True))
            size -= share
        parts.append(PlanPart(kind, device, size, _TEXTS.get(kind, kind), True))
    return replace(plan, parts=tuple(p for p in parts if p.bytes > 0))


_TEXTS = {
    "weights": "weights, as llama.cpp loaded them",
    "kv": "K and V",
    "window kv": "sliding-window K and V",
    "recurrent": "recurrent state",
    "output": "logits",
    "compute": "compute buffer",
    "lora": "LoRA adapters' weights",
    "draft": "the draft model",
    "projector": "the vision projector",
}


def _is_weight(part: PlanPart, kinds: set[str]) -> bool:
    return part.kind == "experts" and "weights" in kinds


def device_name(buffer_device: str) -> str:
    """The plan's device for one of llama.cpp's buffer types: ``CPU``, ``CPU_Mapped``,
    ``CPU_REPACK`` and a GPU's pinned host memory (``CUDA_Host``) are RAM; ``CUDA1`` is GPU1."""
    if "CPU" in buffer_device.upper() or buffer_device.endswith("_Host"):
        return CPU
    digits = len(buffer_device) - len(buffer_device.rstrip("0123456789"))
    return f"GPU{buffer_device[-digits:]}" if digits else "GPU0"
