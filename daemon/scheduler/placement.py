"""GPU layer placement from the memory plan, and how we say where a model runs.

llama.cpp's ``n_gpu_layers`` offloads the output layer first, then the repeating layers from
the last; a GPU holds those layers' weights, their KV cache and its own compute buffer. The
plan counts each of these from the model's own tensors (``memory_plan``), so the placement is
the largest layer count whose plan's GPU part fits free VRAM less a margin, found by bisection
(the plan's GPU part grows with the layers: a few plans, not one a layer). With several GPUs
llama.cpp splits the layers over them by their free memory, and the plan does too; a plan fits
where every GPU's part fits that GPU (``fits_gpus``), so a small GPU whose share overflows
limits the layers. The bisections compare one figure, ``vram_need`` (the fullest GPU's part
scaled to the GPUs' total): it grows with each GPU's part, nearly (the output layer moves from
the first GPU to the last as layers are added), so a bisection finds a count that fits where
one more does not.

A mixture of experts that does not fit whole keeps its attention and shared weights, and its
cache, on the GPU, and the experts of its first layers in RAM (llama-server's ``--n-cpu-moe``,
as its ``-fit`` chooses it): the fewest layers whose experts in RAM let every layer's rest onto
the GPU. That is preferred to fewer GPU layers unless these put more of what a token reads on
the GPU (``read_on_gpu``: a token reads only the experts it uses, so a whole layer is mostly
experts it skips; but with many slots of long contexts, each layer's cache is mostly other
slots', and a layer's experts may be the better use of the room).
Only where the user set neither ``num_gpu`` nor ``num_cpu_moe``: what they set is kept
(layers asked for explicitly are checked against the GPU, and refused where they cannot fit:
``refusal``). No GPU found (a CPU-only machine or build) runs the plan unchanged, 0 layers.

What the runner actually did comes back in its ``RunnerInfo`` and is what gets reported: a
CPU-only llama.cpp build, or a GPU we could not use, is always "100% CPU" in the load log and
the model status, never a silent CPU fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from localllm.daemon.scheduler.context_size import largest_fitting
from localllm.daemon.scheduler.memory_plan import CPU, MemoryPlan
from localllm.model_registry.model_shape import ModelShape

__all__ = [
    "VRAM_MARGIN",
    "VRAM_RESERVE",
    "Placement",
    "PlanFor",
    "choose_placement",
    "describe_placement",
    "fits_gpus",
    "free_vram_text",
    "gpu_usable",
    "read_on_gpu",
    "usable_vram",
    "vram_need",
]

VRAM_MARGIN = 0.10  # keep 10% of free VRAM for the driver and other programs...
VRAM_RESERVE = 512 << 20  # ... and at least this: the runner's CUDA context and libraries'
# workspaces, which are in no llama.cpp buffer
_GIB = 1 << 30

PlanFor = Callable[[int, int], MemoryPlan]  # (GPU layers, layers with experts in RAM) -> plan


@dataclass(frozen=True, slots=True)
class Placement:
    gpu_layers: int  # layers to offload; total_layers means all
    total_layers: int  # repeating layers + the output layer, as llama.cpp counts them
    reason: str
    cpu_moe_layers: int = 0  # the first layers whose experts stay in RAM (asked or chosen)
    fitting_layers: int | None = None  # layers asked explicitly that do not fit: what would
    plans: int = 0  # plans the choice made (a bisection's few: bounded)

    @property
    def gpu_fraction(self) -> float:
        return min(1.0, self.gpu_layers / self.total_layers) if self.total_layers else 0.0


def usable_vram(free_vram: Sequence[int]) -> int:
    """Every GPU's free VRAM less its margin, together (0: no GPU found)."""
    return sum(gpu_usable(free_vram).values())


def gpu_usable(free_vram: Sequence[int]) -> dict[str, int]:
    """Each GPU's free VRAM less its margin, by the plan's name of it ("GPU0": bytes)."""
    return {
        f"GPU{index}": max(0, free - max(int(free * VRAM_MARGIN), VRAM_RESERVE))
        for index, free in enumerate(free_vram)
    }


def fits_gpus(plan: MemoryPlan, free_vram: Sequence[int]) -> bool:
    """Whether every GPU's part of ``plan`` fits that GPU's free VRAM less its margin."""
    usable = gpu_usable(free_vram)
    return all(size <= usable.get(gpu, 0) for gpu, size in plan.gpu_bytes().items())


def vram_need(plan: MemoryPlan, usable: Mapping[str, int]) -> int:
    """``plan``'s GPU part as one figure to hold against the GPUs' ``usable`` VRAM together:
    the fullest GPU's part scaled by that total over its own usable VRAM (rounded up), so it
    fits the total exactly where every GPU's part fits its GPU. One GPU: its part."""
    total = sum(usable.values())
    need = 0
    for gpu, size in plan.gpu_bytes().items():
        room = usable.get(gpu, 0)
        if not room:
            return total + max(1, size)  # a part on a GPU with no room: never fits
        need = max(need, -(-size * total // room))
    return need


def free_vram_text(free: float, gpus: int) -> str:
    """ "7.4 GiB free VRAM"; with several GPUs, their total: "2 GPUs' 14.2 GiB free VRAM"."""
    text = f"{free / _GIB:.1f} GiB free VRAM"
    return f"{gpus} GPUs' {text}" if gpus > 1 else text


def read_on_gpu(plan: MemoryPlan, shape: ModelShape) -> int:
    """What a token reads on a GPU under ``plan``: the weights there, but of the experts only
    the share a token uses (``n_expert_used`` of ``n_expert``), and its own slot's share of
    the caches there. The rest it reads in RAM, on the CPU: the slow part of a split model."""
    used = shape.n_expert_used / shape.n_expert if shape.n_expert else 1.0
    slots = max(1, plan.settings.slots)
    read = 0.0
    for part in plan.parts:
        if part.device == CPU:
            continue
        if part.kind == "weights":
            read += part.bytes
        elif part.kind == "experts":
            read += part.bytes * used
        elif part.kind in ("kv", "window kv", "recurrent"):
            read += part.bytes / slots
    return int(read)


def choose_placement(
    shape: ModelShape,
    plan_for: PlanFor,
    free_vram: list[int],
    layers: int | None = None,
    cpu_moe: int | None = None,
) -> Placement:
    """The GPU layers and the layers whose experts stay in RAM: what was asked (``layers``:
    ``num_gpu``, -1 all; ``cpu_moe``: ``num_cpu_moe``), the rest chosen from the plan."""
    return _Search(shape, plan_for, free_vram).choose(layers, cpu_moe)


class _Search:
    """One placement's search, counting the plans it makes."""

    def __init__(self, shape: ModelShape, plan_for: PlanFor, free_vram: list[int]):
        self.shape = shape
        self.total = shape.n_layer + 1
        self._plan_for = plan_for
        self.free = sum(free_vram)
        self.gpus = len(free_vram)
        self._usable = gpu_usable(free_vram)
        self.usable = sum(self._usable.values())  # what ``need`` is held against
        self.plans = 0

    def plan(self, layers: int, cpu_moe: int) -> MemoryPlan:
        self.plans += 1
        return self._plan_for(layers, cpu_moe)

    def need(self, layers: int, cpu_moe: int) -> int:
        """The plan's ``vram_need``: within ``usable`` where every GPU's part fits."""
        return vram_need(self.plan(layers, cpu_moe), self._usable)

    def choose(self, layers: int | None, cpu_moe: int | None) -> Placement:
        if layers is not None:
            return self._asked(layers, cpu_moe or 0)
        if not self.free:
            return self._placed(0, cpu_moe or 0, "no GPU found")
        if cpu_moe is not None or not self._expert_layers():
            return self._layers(cpu_moe or 0)
        return self._moe()

    def _asked(self, layers: int, cpu_moe: int) -> Placement:
        """Layers set by the user: kept, and where a GPU was found, checked (a refusal names
        what would fit)."""
        count = self.total if layers < 0 else min(layers, self.total)
        reason = f"num_gpu={layers} requested"
        if not self.free or self.need(count, cpu_moe) <= self.usable:
            return self._placed(count, cpu_moe, reason)
        fitting = self._most_layers(cpu_moe, count - 1)
        return self._placed(count, cpu_moe, reason, fitting)

    def _layers(self, cpu_moe: int) -> Placement:
        """The most layers that fit, the experts' placement as given."""
        layers = self._most_layers(cpu_moe, self.total)
        reason = f"{layers}/{self.total} layers fit in {self._free_text()}"
        if cpu_moe:
            reason += f", experts of {self._experts_text(cpu_moe)} layers in RAM (num_cpu_moe)"
        return self._placed(layers, cpu_moe, reason)

    def _moe(self) -> Placement:
        """A mixture of experts: every layer on the GPU if it fits; else the fewest layers'
        experts in RAM that let every layer's rest on (or, where even all of them in RAM do
        not, all experts in RAM and the most layers), unless the most whole layers put more
        of what a token reads on the GPU (``read_on_gpu``)."""
        n_layer, total = self.shape.n_layer, self.total
        whole = self._most_layers(0, total)
        if whole == total:
            return self._placed(total, 0, f"{total}/{total} layers fit in {self._free_text()}")
        # the most layers whose experts stay on the GPU with every layer there (the GPU part
        # grows with them)
        kept = largest_fitting(
            lambda on_gpu: self.need(total, n_layer - on_gpu), self.usable, 0, n_layer - 1, 1
        )
        if kept is not None:
            layers, cpu_moe = total, n_layer - kept
        else:
            layers, cpu_moe = self._most_layers(n_layer, total), n_layer
        dense, experts_in_ram = self.plan(whole, 0), self.plan(layers, cpu_moe)
        if not layers or self._read(dense) > self._read(experts_in_ram):
            return self._placed(whole, 0, f"{whole}/{total} layers fit in {self._free_text()}")
        experts = f"experts of {self._experts_text(cpu_moe)} layers in RAM"
        if layers == total:
            gpus = "the GPUs" if self.gpus > 1 else "the GPU"
            reason = f"all layers on {gpus}, {experts} ({self._free_text()})"
        else:
            reason = f"{layers}/{total} layers fit in {self._free_text()}, {experts}"
        return self._placed(layers, cpu_moe, reason)

    def _read(self, plan: MemoryPlan) -> int:
        return read_on_gpu(plan, self.shape)

    def _most_layers(self, cpu_moe: int, most: int) -> int:
        """The most GPU layers, up to ``most``, whose plan's GPU parts fit."""
        if most <= 0:
            return 0
        if self.need(most, cpu_moe) <= self.usable:
            return most
        found = largest_fitting(lambda n: self.need(n, cpu_moe), self.usable, 1, most - 1, 1)
        return found or 0

    def _expert_layers(self) -> list[int]:
        return sorted(
            {g.layer for g in self.shape.weights if g.kind == "experts" and g.layer is not None}
        )

    def _experts_text(self, cpu_moe: int) -> str:
        """ "12/48": of the layers with experts, those among the first ``cpu_moe``."""
        with_experts = self._expert_layers()
        covered = len(with_experts) if cpu_moe < 0 else sum(i < cpu_moe for i in with_experts)
        return f"{covered}/{len(with_experts)}"

    def _free_text(self) -> str:
        return free_vram_text(self.free, self.gpus)

    def _placed(
        self, layers: int, cpu_moe: int, reason: str, fitting: int | None = None
    ) -> Placement:
        return Placement(layers, self.total, reason, cpu_moe, fitting, self.plans)


def describe_placement(
    gpu_layers: int, total_layers: int, backend: str, experts: tuple[int, int] = (0, 0)
) -> str:
    """Ollama's PROCESSOR column: "100% CPU", "100% GPU" or "25%/75% CPU/GPU"; with a MoE
    model's experts kept in RAM (``experts``: layers with them in RAM, layers with experts),
    "100% GPU, experts of 12/48 layers on CPU"."""
    if gpu_layers <= 0 or backend.lower() == "cpu" or total_layers <= 0:
        return "100% CPU"
    on_cpu, with_experts = experts
    kept = f", experts of {on_cpu}/{with_experts} layers on CPU" if on_cpu else ""
    if gpu_layers >= total_layers:
        return f"100% GPU{kept}"
    gpu = round(100 * gpu_layers / total_layers)
    return f"{100 - gpu}%/{gpu}% CPU/GPU{kept}"
