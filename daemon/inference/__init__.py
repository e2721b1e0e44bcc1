"""The one path from a job to tokens, and the one owner of a generation's lifecycle.

Routes translate their wire format into a ``GenerationJob``, ``EmbedJob`` or ``RerankJob`` and
hand it to ``Inference`` (model resolution, options, templates, tool calls, images); what comes
back is a ``Generation`` of API-neutral ``Delta`` items ending in ``Finished``.
"""

from localllm.daemon.inference.generation import (
    Collected,
    Delta,
    Finished,
    Generation,
    GenerationStats,
    ToolCallDelta,
)
from localllm.daemon.inference.inference import Inference
from localllm.daemon.inference.jobs import (
    Embeddings,
    EmbedJob,
    GenerationJob,
    Rerankings,
    RerankJob,
)

__all__ = [
    "Collected",
    "Delta",
    "EmbedJob",
    "Embeddings",
    "Finished",
    "Generation",
    "GenerationJob",
    "GenerationStats",
    "Inference",
    "RerankJob",
    "Rerankings",
    "ToolCallDelta",
]
