"""Pulling models from Hugging Face: names to files, resumable verified downloads, progress.

Start with :class:`Puller`; :class:`Catalog` lists the curated short names.
"""

from localllm.model_registry.pull.catalog import KINDS, Catalog, CatalogEntry
from localllm.model_registry.pull.events import PullEvent
from localllm.model_registry.pull.fetch import DownloadOptions
from localllm.model_registry.pull.partial import PartialInfo, list_partials
from localllm.model_registry.pull.puller import Puller
from localllm.model_registry.pull.quants import QUANT_PREFERENCE, quant_of
from localllm.model_registry.pull.resolve import DEFAULT_ENDPOINT, PlannedFile, PullPlan

__all__ = [
    "DEFAULT_ENDPOINT",
    "KINDS",
    "QUANT_PREFERENCE",
    "Catalog",
    "CatalogEntry",
    "DownloadOptions",
    "PartialInfo",
    "PlannedFile",
    "PullEvent",
    "PullPlan",
    "Puller",
    "list_partials",
    "quant_of",
]
