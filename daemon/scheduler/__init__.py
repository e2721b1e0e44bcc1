"""The scheduler: loads, keeps, evicts and queues for every runner (see ``scheduler``)."""

from daemon.scheduler.lease import Lease
from daemon.scheduler.loaded import (
    LoadTarget,
    ModelStatus,
    Runner,
    RunnerFactory,
    RunnerOptions,
)
from daemon.scheduler.memory import MemoryInfo, ModelFootprint, estimate_bytes, system_memory
from daemon.scheduler.placement import Placement, describe_placement
from daemon.scheduler.scheduler import Scheduler, SchedulerConfig

__all__ = [
    "Lease",
    "LoadTarget",
    "MemoryInfo",
    "ModelFootprint",
    "ModelStatus",
    "Placement",
    "Runner",
    "RunnerFactory",
    "RunnerOptions",
    "Scheduler",
    "SchedulerConfig",
    "describe_placement",
    "estimate_bytes",
    "system_memory",
]
