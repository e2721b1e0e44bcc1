"""The scheduler: loads, keeps, evicts and queues for every runner (see ``scheduler``)."""

from localllm.daemon.scheduler.config import SchedulerConfig
from localllm.daemon.scheduler.lease import Lease
from localllm.daemon.scheduler.loaded import (
    LoadTarget,
    ModelStatus,
    PromptCacheUse,
    Runner,
    RunnerFactory,
    RunnerOptions,
    TargetShapes,
)
from localllm.daemon.scheduler.loader import LoadPlan
from localllm.daemon.scheduler.measured import MEASURED_FILE
from localllm.daemon.scheduler.memory import MemoryInfo, ModelFootprint, system_memory
from localllm.daemon.scheduler.memory_plan import MemoryPlan, PlanPart, PlanSettings, plan_memory
from localllm.daemon.scheduler.placement import Placement, describe_placement
from localllm.daemon.scheduler.scheduler import Scheduler

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
    "PromptCacheUse",
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
