"""The memory plan: how many bytes a runner will take, part by part and device by device.

Before a load, the daemon needs to know what it will cost: to evict enough, to pick a context
that fits, to place layers on a GPU, to show the user. The plan answers from the model itself
(``ModelShape``: its header's tensors and hyperparameters) and the runner's settings, the way
llama.cpp sizes what it allocates at load:

- weights: every tensor's bytes, as the file has them (the CPU's share mapped from the file),
  plus the copies llama.cpp's CPU backend repacks for this CPU's kernels (``CPU_REPACK``);
  a mixture of experts' experts apart (``experts``), so a placement can keep them in RAM;
- the KV cache of each layer: K and V of its key/value heads, per cell, at the cache type's
  bytes per value (q8_0 34 and q4_0 18 bytes per block of 32), for every slot's cells: the
  context per slot rounded up to 256 in full-attention layers, and in sliding-window layers
  the window and one ubatch, rounded up to 256 (llama.cpp's ``swa_full`` off, as the runner
  runs it) (``kv`` and ``window kv``); a recurrent model's state instead (``recurrent``);
- the output buffer: a float per vocabulary entry for one output row per slot;
- the compute buffer (``compute_buffer``): the worst-case ubatch's graph, one on each device
  that runs layers;
- a vision projector's, draft model's and LoRA adapters' weights (a draft model with its own
  cache, output and compute buffer);
- and apart, as RAM the runner may fill later: the host prompt cache
  (``LOCALLLM_HOST_CACHE_MB``) and a sliding-window model's checkpoints (as much again at
  most: a few window states per slot).

Several GPUs share the offloaded layers as llama.cpp's default split does (``split_mode``
layer, no ``tensor_split``): in proportion to each GPU's free memory (``gpu_split``), the first
layers on the first GPU, the output layer with the last (``layer_devices``); a layer's caches
go with it, and each GPU with layers has a compute buffer of its own, sized as one GPU's would
be for those layers (conservative: llama.cpp's allocator may share more). The projector and
LoRA adapters are planned on the first GPU; the draft model in RAM, where the runner loads it.

Where llama.cpp has loaded the same model with the same settings, its own figures replace the
plan's (``measured``). Pure functions: nothing here touches a file or llama.cpp. Not planned: a
projector's compute buffer (its images' graph), the embedding context a chat model opens on
its first embedding request, the graph inputs llama.cpp copies for pipeline parallelism, and
the runner process itself (Python, the llama.cpp library: a few tens of MB).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from localllm.daemon.runners.attention import flash_attention_setting
from localllm.daemon.runners.types import KvCacheType, RunnerSpec
from localllm.daemon.scheduler.compute_buffer import compute_buffer_bytes
from localllm.daemon.scheduler.layer_devices import CPU, GPU0, LayerDevices
from localllm.model_registry.model_shape import ModelShape

__all__ = [
    "CHECKPOINTS_PER_SLOT",
    "CPU",
    "GPU0",
    "LATER_KINDS",
    "PART_KINDS",
    "MemoryPlan",
    "PlanPart",
    "PlanSettings",
    "cache_cells",
    "plan_memory",
    "plan_settings",
]

PART_KINDS: tuple[str, ...] = ("weights", "experts", "kv", "window kv", "recurrent", "output")
PART_KINDS += ("compute", "projector", "draft", "lora", "host cache", "checkpoints")
LATER_KINDS = ("host cache", "checkpoints")  # RAM the runner may fill later, shown apart
CHECKPOINTS_PER_SLOT = 4  # the runner's window checkpoints per slot (worker ``window``)
_PAD = 256  # llama.cpp rounds a cache's cells up to this
# bytes per value of each cache type: ggml's q8_0 and q4_0 keep 32 values in 34 and 18 bytes
_KV_BYTES: dict[str, tuple[int, int]] = {
    "f16": (2, 1),
    "f32": (4, 1),
    "q8_0": (34, 32),
    "q4_0": (18, 32),
}
_EMBEDDING_SEQUENCES = 16  # an embedding model's context packs this many inputs (``embedder``)
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class PlanPart:
    """``bytes`` of one ``kind`` (``PART_KINDS``) on one ``device`` ("CPU", "GPU0"...), with a
    short text that says what it is; ``measured``: llama.cpp's own figure, not the plan's."""

    kind: str
    device: str
    bytes: int
    text: str
    measured: bool = False


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How the runner will run the model (what decides its buffers)."""

    ctx_per_slot: int
    slots: int = 1
    kv_type: KvCacheType = "f16"
    flash_attention: bool = True  # resolved: llama.cpp's "auto" means on
    batch: int = 512  # the runner's batch: llama.cpp's n_batch and n_ubatch
    gpu_layers: int = 0  # llama.cpp's n_gpu_layers: the output layer, then the last ones
    # (-1: all; the scheduler's "auto" is decided before a plan)
    gpu_split: tuple[int, ...] = ()  # each GPU's free bytes, in llama.cpp's order: the
    # offloaded layers' split (none or one: all on GPU0)
    cpu_moe_layers: int = 0  # the first layers whose experts stay in RAM (-1: all)
    repack_types: frozenset[str] = frozenset()  # weight types this CPU repacks (``repack``)
    projector: ModelShape | None = None
    draft: ModelShape | None = None
    draft_flash_attention: bool = True
    draft_batch: int = 512  # the draft's context batch: the spec's, not widened to the slots
    loras: tuple[ModelShape, ...] = ()
    host_cache_bytes: int = 0
    embedding: bool = False  # an embedding model's context: inputs of up to ctx_per_slot
    # tokens, one ubatch each, in one unified cache
    swa_full: bool = False  # sliding-window layers keep a cell per token (the draft's context)


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    parts: tuple[PlanPart, ...]
    settings: PlanSettings
    notes: tuple[str, ...] = ()  # what is not planned for this model

    def total(self, device: str | None = None, *, later: bool = False) -> int:
        """Bytes of the parts allocated at load (``later``: of all parts), on one device or
        on all."""
        return sum(
            p.bytes
            for p in self.parts
            if (device is None or p.device == device) and (later or p.kind not in LATER_KINDS)
        )

    @property
    def load_bytes(self) -> int:
        """All that llama.cpp allocates at load, every device."""
        return self.total()

    @property
    def later_bytes(self) -> int:
        """RAM the runner may fill later (host cache, checkpoints)."""
        return sum(p.bytes for p in self.parts if p.kind in LATER_KINDS)

    @property
    def ram_bytes(self) -> int:
        return self.total(CPU)

    @property
    def vram_bytes(self) -> int:
        """The GPU part, every GPU."""
        return sum(self.gpu_bytes().values())

    def gpu_bytes(self) -> dict[str, int]:
        """The part on each GPU that holds one ("GPU0": bytes), in the GPUs' order."""
        return {device: self.total(device) for device in self.devices() if device != CPU}

    @property
    def measured(self) -> bool:
        return any(p.measured for p in self.parts)

    def devices(self) -> list[str]:
        return sorted({p.device for p in self.parts}, key=lambda d: (d != CPU, len(d), d))

    def kind_bytes(self, kind: str, device: str | None = None) -> int:
        return sum(p.bytes for p in self.parts if p.kind == kind and device in (None, p.device))

    def describe(self) -> list[str]:
        """One line per part: kind, device, MiB, what it is (for ``show`` and the load log)."""
        source = {True: "measured", False: "planned"}
        return [
            f"{p.kind:<12} {p.device:<5} {p.bytes / _MIB:10.1f} MiB  {p.text} "
            f"({source[p.measured]})"
            for p in self.parts
        ]


def plan_settings(
    spec: RunnerSpec,
    shape: ModelShape,
    *,
    repack_types: frozenset[str] = frozenset(),
    projector: ModelShape | None = None,
    draft: ModelShape | None = None,
    loras: tuple[ModelShape, ...] = (),
    gpu_split: tuple[int, ...] = (),
) -> PlanSettings:
    """The settings a runner started with ``spec`` runs ``shape`` with: its batch as the
    runner makes it, flash attention decided as the runner decides ``auto``
    (``daemon.runners.attention``; llama.cpp's own ``auto`` is on); ``gpu_split``: each GPU's
    free bytes, which llama.cpp splits the layers by."""
    on_gpu = spec.num_gpu_layers != 0
    batch = max(spec.num_batch, spec.num_parallel)
    return PlanSettings(
        ctx_per_slot=spec.num_ctx,
        slots=max(1, spec.num_parallel),
        kv_type=spec.kv_cache_type,
        flash_attention=_flash(spec, shape, batch, on_gpu),
        batch=spec.num_ctx if spec.embedding_only else batch,
        gpu_layers=spec.num_gpu_layers,
        gpu_split=tuple(gpu_split),
        cpu_moe_layers=spec.num_cpu_moe,
        repack_types=repack_types,
        projector=projector,
        draft=draft,
        draft_flash_attention=_flash(spec, draft, max(1, spec.num_batch), on_gpu)
        if draft
        else True,
        draft_batch=max(1, spec.num_batch),
        loras=loras,
        host_cache_bytes=spec.host_cache_bytes,
        embedding=spec.embedding_only,
    )


def _flash(spec: RunnerSpec, shape: ModelShape, batch: int, on_gpu: bool) -> bool:
    if spec.embedding_only:
        return True  # the embedder leaves it to llama.cpp: auto, on
    setting = flash_attention_setting(
        spec.flash_attention,
        head_size=shape.head_k,
        n_head=shape.n_head[0] if shape.n_head else 0,  # llama.cpp's n_head: the first's
        n_ctx=spec.num_ctx,
        n_batch=batch,
        kv_cache_type=spec.kv_cache_type,
        on_gpu=on_gpu,
    )
    return setting != "off"


def cache_cells(shape: ModelShape, settings: PlanSettings) -> tuple[int, int, int, int]:
    """(cells per stream in full-attention layers, in sliding-window layers, streams, ubatch
    tokens), as llama.cpp sizes them from the context and batch."""
    if settings.embedding:
        cells = _pad(settings.ctx_per_slot)
        return cells, cells, 1, cells
    streams = max(1, settings.slots)
    n_ctx = _pad(settings.ctx_per_slot * streams)
    cells = _pad(n_ctx // streams)
    n_ctx = cells * streams
    tokens = min(n_ctx, settings.batch)
    window = _pad(min(cells, shape.sliding_window + tokens)) if shape.sliding_window else 0
    return cells, cells if settings.swa_full and window else window, streams, tokens


def plan_memory(shape: ModelShape, settings: PlanSettings) -> MemoryPlan:
    """Every part of the runner's memory for ``shape`` run with ``settings``."""
    devices = LayerDevices(
        shape.n_layer, settings.gpu_layers, settings.gpu_split, settings.cpu_moe_layers
    )
    parts = [*_weights(shape, settings, devices), *_context(shape, settings, devices)]
    parts += _extras(shape, settings, devices)
    parts += _later(shape, settings)
    notes = list(shape.notes)
    if settings.projector is not None:
        notes.append("the projector's compute buffer (its images' graph) is not planned")
    return MemoryPlan(tuple(p for p in parts if p.bytes > 0), settings, tuple(notes))


def _weights(shape: ModelShape, settings: PlanSettings, devices: LayerDevices) -> list[PlanPart]:
    """The model's tensors where llama.cpp puts them, and the CPU's repacked copies."""
    found: dict[tuple[str, str], int] = {}
    repacked = 0
    for group in shape.weights:
        if group.layer is None:
            device = devices.output if group.kind == "output" else CPU
        elif group.kind == "experts":
            device = devices.experts(group.layer)
        else:
            device = devices.layer(group.layer)
        kind = "experts" if group.kind == "experts" else "weights"
        found[(kind, device)] = found.get((kind, device), 0) + group.bytes
        if device == CPU and group.repackable and group.ggml_type in settings.repack_types:
            repacked += group.bytes
    if shape.tied_output and devices.output != CPU:  # the output's own copy of the embeddings
        tied = shape.bytes_of("embeddings")
        key = ("weights", devices.output)
        found[key] = found.get(key, 0) + tied
    parts = [
        PlanPart(kind, device, size, _weights_text(kind, device))
        for (kind, device), size in found.items()
    ]
    if repacked:
        parts.append(PlanPart("weights", CPU, repacked, "repacked for this CPU's kernels"))
    return parts


def _weights_text(kind: str, device: str) -> str:
    what = "the experts' weights" if kind == "experts" else "weights"
    return f"{what}, mapped from the file" if device == CPU else f"{what}, copied to the GPU"


def _context(shape: ModelShape, settings: PlanSettings, devices: LayerDevices) -> list[PlanPart]:
    """The generation (or embedding) context: caches, output buffer, compute buffer."""
    cells, window, streams, tokens = cache_cells(shape, settings)
    parts = _caches(shape, settings, devices, cells, window, streams)
    parts.append(_output(shape, settings))
    parts += _compute(shape, settings, devices, cells, window, tokens)
    return parts


def _caches(
    shape: ModelShape,
    settings: PlanSettings,
    devices: LayerDevices,
    cells: int,
    window: int,
    streams: int,
) -> list[PlanPart]:
    found: dict[tuple[str, str], int] = {}
    if shape.kv_cache:
        widest = max((shape.kv_widths(i)[1] for i in range(shape.n_layer)), default=0)
        for layer in range(shape.n_layer):
            k, v = shape.kv_widths(layer)
            if not k:
                continue
            if not settings.flash_attention:  # llama.cpp pads a transposed V to the widest
                v = widest
            here = window if shape.is_swa(layer) else cells
            size = (_row(k, settings.kv_type) + _row(v, settings.kv_type)) * here * streams
            key = ("window kv" if shape.is_swa(layer) else "kv", devices.layer(layer))
            found[key] = found.get(key, 0) + size
    state = (shape.recurrent_r + shape.recurrent_s) * 4 * max(1, settings.slots)
    for layer, recurrent in enumerate(shape.recurrent_layers):
        if recurrent and state:  # llama.cpp keeps a layer's state on its device
            key = ("recurrent", devices.layer(layer))
            found[key] = found.get(key, 0) + state
    texts = {
        "kv": f"K and V, {cells:,} cells x {streams} slots, {settings.kv_type}",
        "window kv": f"sliding-window K and V, {window:,} cells x {streams} slots",
        "recurrent": f"recurrent state of {max(1, settings.slots)} sequences",
    }
    return [PlanPart(kind, device, size, texts[kind]) for (kind, device), size in found.items()]


def _row(values: int, kv_type: KvCacheType) -> int:
    size, block = _KV_BYTES.get(kv_type, _KV_BYTES["f16"])
    return values * size // block


def _output(shape: ModelShape, settings: PlanSettings) -> PlanPart:
    """llama.cpp's output buffer: logits for one row per sequence (an embedding context's
    embeddings too), in RAM."""
    rows = _EMBEDDING_SEQUENCES if settings.embedding else max(1, settings.slots)
    floats = shape.n_vocab + (shape.n_embd if settings.embedding else 0)
    return PlanPart("output", CPU, rows * floats * 4, f"logits of {rows} rows")


def _compute(
    shape: ModelShape,
    settings: PlanSettings,
    devices: LayerDevices,
    cells: int,
    window: int,
    tokens: int,
) -> list[PlanPart]:
    """One compute buffer per device that runs layers (the output layer's device computes
    the logits), each GPU's sized for its own layers as one GPU's would be; beside the GPUs',
    a small one in RAM for the graph's inputs."""
    flash = settings.flash_attention
    text = f"graph of a {tokens}-token batch, flash attention {'on' if flash else 'off'}"
    parts = []
    for device in (CPU, *devices.gpus):
        layers = devices.layers_on(device, shape.n_layer)
        output = devices.output == device
        if not layers and not output:
            continue
        size = compute_buffer_bytes(
            shape,
            tokens=tokens,
            cells=cells,
            window_cells=window,
            flash=flash,
            layers=layers,
            output=output,
        )
        parts.append(PlanPart("compute", device, size, text))
    if devices.any_gpu:
        host = 2 * tokens * shape.n_embd * 4
        parts.append(PlanPart("compute", CPU, host, "the graph's inputs, in RAM"))
    return parts


def _extras(shape: ModelShape, settings: PlanSettings, devices: LayerDevices) -> list[PlanPart]:
    """A projector's, a draft model's and LoRA adapters' parts: on the first GPU, where
    llama.cpp's vision projector runs, but the draft in RAM (the runner loads it on the CPU
    so that the GPU keeps its room for the model it serves)."""
    device = GPU0 if devices.any_gpu else CPU
    parts = []
    if settings.projector is not None:
        size = settings.projector.weights_bytes
        parts.append(PlanPart("projector", device, size, "the vision projector's weights"))
    if settings.draft is not None:
        parts += _draft(settings.draft, settings, CPU)
    for adapter in settings.loras:
        parts.append(PlanPart("lora", device, adapter.weights_bytes, "a LoRA adapter's weights"))
    return parts


def _draft(draft: ModelShape, settings: PlanSettings, device: str) -> list[PlanPart]:
    """The draft model: its weights and its own context (a full-size sliding-window cache,
    the spec's batch), all on ``device``."""
    own = replace(
        settings,
        flash_attention=settings.draft_flash_attention,
        batch=settings.draft_batch,
        gpu_layers=-1 if device != CPU else 0,
        gpu_split=(),
        projector=None,
        draft=None,
        loras=(),
        host_cache_bytes=0,
        swa_full=True,
    )
    plan = plan_memory(draft, own)
    size = plan.total()
    return [PlanPart("draft", device, size, _draft_text(plan))]


def _draft_text(plan: MemoryPlan) -> str:
    weights = plan.kind_bytes("weights") + plan.kind_bytes("experts")
    cache = sum(plan.kind_bytes(kind) for kind in ("kv", "window kv", "recurrent"))
    return (
        f"the draft model: weights {weights / _MIB:.1f} MiB, cache {cache / _MIB:.1f} MiB, "
        f"compute {plan.kind_bytes('compute') / _MIB:.1f} MiB"
    )


def _later(shape: ModelShape, settings: PlanSettings) -> list[PlanPart]:
    """The host prompt cache, and a sliding-window model's checkpoints: as much RAM again at
    most, a few window states per slot."""
    host = settings.host_cache_bytes
    if not host or settings.embedding:
        return []
    parts = [PlanPart("host cache", CPU, host, "prompts of sequences evicted from slots")]
    if shape.sliding_window:
        _, window, _, _ = cache_cells(shape, settings)
        swa = (shape.kv_widths(i) for i in range(shape.n_layer) if shape.is_swa(i))
        state = sum(_row(k, settings.kv_type) + _row(v, settings.kv_type) for k, v in swa)
        slots = max(1, settings.slots)
        size = min(host, slots * CHECKPOINTS_PER_SLOT * state * window)
        text = f"up to {CHECKPOINTS_PER_SLOT} window states per slot"
        parts.append(PlanPart("checkpoints", CPU, size, text))
    return parts


def _pad(cells: int) -> int:
    return -(-max(1, cells) // _PAD) * _PAD
