"""How much room there is for a load, at one look at the memory: the free RAM the scheduler may
plan for (after headroom, loaded models counted by their plan's RAM part: what a GPU holds is
the GPU's), what unloading some models would give back, LOCALLLM_MAX_LOADED_MODELS, and which
busy models to drain when no idle one makes room."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from localllm.daemon.errors import EvictionBlockedError
from localllm.daemon.scheduler.loaded import LoadedModel
from localllm.daemon.scheduler.memory import MemoryInfo

__all__ = ["Room", "last_used"]

GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class Room:
    info: MemoryInfo
    loaded: tuple[LoadedModel, ...]
    headroom: float  # fraction of free memory never planned for
    max_loaded_models: int  # 0: as many as memory allows

    def free(self, unloaded: Iterable[LoadedModel] = ()) -> float:
        """Free memory we may plan for once ``unloaded`` are gone (their RAM back)."""
        freed = sum(_ram(m) for m in unloaded)
        loaded = sum(_ram(m) for m in self.loaded) - freed
        free = min(self.info.available + freed, self.info.total - loaded)
        return max(0.0, free * (1 - self.headroom))

    def fits(self, needed: int, unloaded: Iterable[LoadedModel] = (), count: bool = True) -> bool:
        """Whether ``needed`` fits once ``unloaded`` are (``count``: and the model count)."""
        unloaded = list(unloaded)
        left = len(self.loaded) - len(unloaded)
        too_many = count and 0 < self.max_loaded_models <= left
        return not too_many and needed <= self.free(unloaded)

    def to_drain(
        self, name: str, needed: int, blocked: Callable[[LoadedModel], bool]
    ) -> list[LoadedModel]:
        """The least recently used models that together make room for ``name`` (none that
        can never drain: ``blocked``); EvictionBlockedError where no such set exists."""
        chosen: list[LoadedModel] = []
        stuck: list[LoadedModel] = []
        for model in sorted(self.loaded, key=last_used):
            if self.fits(needed, chosen):
                break
            if model.name == name:
                continue
            (stuck if blocked(model) else chosen).append(model)
        if not self.fits(needed, chosen):
            raise EvictionBlockedError(name, [m.name for m in stuck], self._wanted(needed))
        return chosen

    def _wanted(self, needed: int) -> str:
        limit = self.max_loaded_models
        if 0 < limit <= len(self.loaded):
            return f"LOCALLLM_MAX_LOADED_MODELS is {limit}"
        return f"it needs about {needed / GIB:.1f} GiB and {self.free() / GIB:.1f} GiB is free"


def last_used(model: LoadedModel) -> float:
    return model.last_used


def _ram(model: LoadedModel) -> int:
    """What a loaded model takes of system memory: its plan's RAM part."""
    return model.memory.ram_bytes if model.memory is not None else model.estimate_bytes
