"""Passages from the chat's documents, put where the model reads instructions: appended to the
system prompt (or as the system prompt), since many chat templates accept one system message
only, and first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from localllm.app.gui.state.gateway import ChatTurn

__all__ = ["with_context"]


def with_context(turns: Sequence[ChatTurn], context: str) -> tuple[ChatTurn, ...]:
    if not context:
        return tuple(turns)
    if turns and turns[0].role == "system":
        head = replace(turns[0], content=f"{turns[0].content}\n\n{context}")
        return (head, *turns[1:])
    return (ChatTurn("system", context), *turns)
