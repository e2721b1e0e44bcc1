"""What inference is asked to do: a generation or an embedding, in neutral terms.

Routes translate their wire format into these; ``Inference`` runs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from localllm.daemon.inference.tool_calls import ToolChoice

__all__ = ["EmbedJob", "Embeddings", "GenerationJob", "RerankJob", "Rerankings"]


@dataclass(frozen=True, slots=True)
class GenerationJob:
    """What to generate. Exactly one of ``messages`` (chat) or ``prompt`` is set.

    ``images`` are the images as the client sent them (PNG, JPEG... bytes), in the order the
    messages' image parts (``templates.image_part``) name them; with a ``prompt`` they come
    before its text."""

    model: str
    messages: Sequence[Mapping[str, object]] | None = None
    prompt: str | None = None
    raw: bool = False  # the prompt goes to the model as is (no template)
    # Fill in the middle: the text after the gap, the prompt being the text before it; both
    # go to the model as plain text in its FIM prompt, never through the template.
    suffix: str | None = None
    options: Mapping[str, object] = field(default_factory=dict)  # Ollama option names
    tools: Sequence[Mapping[str, object]] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    json_schema: Mapping[str, object] | None = None  # output must match (grammar-enforced)
    logit_bias: Mapping[int, float] = field(default_factory=dict)
    logprobs: int | None = None  # None: off; n: top n alternatives per token
    keep_alive: float | None = None  # seconds; None: the daemon's default
    template: str | None = None  # replaces the model's chat template (Ollama's per-request one)
    images: Sequence[bytes] = ()
    # True/False, or an effort ("low", "medium", "high") for templates that take one; None:
    # the model's own default. Thinking never reaches ``Delta.text``.
    think: bool | str | None = None
    think_budget: int | None = None  # thinking tokens before the model is made to answer
    # A model that cannot think answers without thinking instead of refusing ``think``
    # (Anthropic's ``thinking``: "adaptive" lets the model decide, as Anthropic's API does).
    think_optional: bool = False
    # Drop the oldest turns of a chat that does not fit its context (``history_fit``).
    truncate: bool = False
    # What the route left out of the request (tools it cannot run...), for the request log.
    warnings: Sequence[str] = ()

    @property
    def templated(self) -> bool:
        """Whether the prompt goes through a chat template: not a raw one, nor a FIM one."""
        return not self.raw and self.suffix is None


@dataclass(frozen=True, slots=True)
class EmbedJob:
    model: str
    inputs: Sequence[str]
    options: Mapping[str, object] = field(default_factory=dict)
    truncate: bool = False
    keep_alive: float | None = None


@dataclass(frozen=True, slots=True)
class Embeddings:
    model: str
    vectors: list[list[float]]
    prompt_tokens: int


@dataclass(frozen=True, slots=True)
class RerankJob:
    """Score ``documents`` by their relevance to ``query`` with a reranker model."""

    model: str
    query: str
    documents: Sequence[str]
    options: Mapping[str, object] = field(default_factory=dict)
    truncate: bool = True  # a document too long for the context loses its end (else a 400)
    keep_alive: float | None = None


@dataclass(frozen=True, slots=True)
class Rerankings:
    model: str
    scores: list[float]  # per document, in the job's order
    prompt_tokens: int
    truncated: tuple[int, ...] = ()  # documents that lost their end, by index
