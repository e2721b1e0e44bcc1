"""The scheduler: loads, keeps, evicts and queues for every runner (see ``scheduler``)."""

from daemon.scheduler.lease import Lease
from daemon.scheduler.loaded import (
    LoadTarget,
    ModelStatus,
    Runner,
    RunnerFactory,
    RunnerOptions,
    TargetShapes,
)
from daemon.scheduler.loader import LoadPlan
from daemon.scheduler.measured import MEASURED_FILE
from daemon.scheduler.memory import MemoryInfo, ModelFootprint, system_memory
from daemon.scheduler.memory_plan import MemoryPlan, PlanPart, PlanSettings, plan_memory
from daemon.scheduler.placement import Placement, describe_placement
from daemon.scheduler.scheduler import Scheduler, SchedulerConfig

__all__ = [
    "MEASURED_FILE",
    "Lease",
    "LoadPlan",
    "LoadTarget",
    "MemoryInfo",
    "MemoryPlan",
    "ModelFootprint",
    "ModelStatus",
    "Placement",
    "PlanPart",
    "PlanSettings",
    "Runner",
    "RunnerFactory",
    "RunnerOptions",
    "Scheduler",
    "SchedulerConfig",
    "TargetShapes",
    "describe_placement",
    "plan_memory",
    "system_memory",
]
