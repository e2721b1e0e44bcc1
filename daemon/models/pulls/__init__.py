"""Pulls owned by the daemon: tasks that outlive the HTTP streams watching them, and the
pull list that outlives the daemon."""

from localllm.daemon.models.pulls.manager import PullJob, PullManager
from localllm.daemon.models.pulls.records import PullRecord, PullRecords

__all__ = ["PullJob", "PullManager", "PullRecord", "PullRecords"]
