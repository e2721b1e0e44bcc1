"""The one path from a job to tokens, and the one owner of a generation's lifecycle.

Routes translate their wire format into a ``GenerationJob``, ``EmbedJob`` or ``RerankJob`` and
hand it to ``Inference`` (model resolution, options, templates, tool calls, images); what comes
back is a ``GenerationStream`` (a local ``Generation`` or a remote one) of API-neutral
``Delta`` items ending in ``Finished``. ``Backend`` is where a request's model runs, chosen once.
"""

from localllm.daemon.inference.backend import Backend
from localllm.daemon.inference.generation import (
    Collected,
    Delta,
    Finished,
    Generation,
    GenerationStats,
    GenerationStream,
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
    "Backend",
    "Collected",
    "Delta",
    "EmbedJob",
    "Embeddings",
    "Finished",
    "Generation",
    "GenerationJob",
    "GenerationStats",
    "GenerationStream",
    "Inference",
    "RerankJob",
    "Rerankings",
    "ToolCallDelta",
]
