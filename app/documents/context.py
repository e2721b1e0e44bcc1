"""The passages a reply builds on, as the block of numbered sources the model reads, kept
within a budget so the documents never crowd the conversation out of the context."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from localllm.app.documents.index import Passage

__all__ = ["CHARS_PER_TOKEN", "DocumentContext", "build_context"]

CHARS_PER_TOKEN = 4  # a rough, safe side estimate for English text
_HEADER = (
    "Answer using the numbered sources below when they are relevant, and cite them by number, "
    "like [1]. If they do not answer the question, say so.\n\n"
)


@dataclass(frozen=True, slots=True)
class DocumentContext:
    text: str  # for the system prompt
    sources: tuple[Passage, ...]  # numbered from 1, in order


def build_context(passages: Sequence[Passage], budget_tokens: int) -> DocumentContext:
    """As many of ``passages`` (best first) as fit in ``budget_tokens``; the first one is cut
    to fit rather than left out."""
    budget = max(0, budget_tokens) * CHARS_PER_TOKEN - len(_HEADER)
    blocks: list[str] = []
    kept: list[Passage] = []
    for passage in passages:
        head = f"[{len(kept) + 1}] {passage.name}, {passage.where}:\n"
        block = head + passage.text.strip() + "\n\n"
        if len(block) > budget:
            if kept or budget <= len(head) + 40:
                break
            block = block[:budget]
        blocks.append(block)
        kept.append(passage)
        budget -= len(block)
    if not kept:
        return DocumentContext("", ())
    return DocumentContext(_HEADER + "".join(blocks).rstrip(), tuple(kept))
