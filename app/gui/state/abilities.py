"""What a model can do beyond plain chat, as the badges every list and page shows (Qt-free):
the same words, tones and explanations on Models, Discover and a model's Overview.

Capabilities are the daemon's words (``show``'s ``capabilities``, the catalog's
``capabilities``); "completion" and "chat" are what every model does, so they get no badge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Ability", "abilities_of", "abilities_text"]


@dataclass(frozen=True, slots=True)
class Ability:
    label: str  # the badge's word
    tone: str  # what it means (``design.tokens``)
    why: str  # its tooltip


_KNOWN = {
    "vision": Ability("vision", "info", "Sees images: attach pictures in a chat"),
    "thinking": Ability("thinking", "accent", "Reasons before it answers (the chat's Think)"),
    "tools": Ability("tools", "accent", "Calls tools: the Tools page's MCP servers"),
    "embedding": Ability("embedding", "neutral", "Embeds text: searches the chats' documents"),
    "rerank": Ability("rerank", "neutral", "Reranks search results: orders the chats' documents"),
}


def abilities_of(capabilities: Iterable[str] | None) -> tuple[Ability, ...]:
    """The badges for ``capabilities``, always in the same order (None: not known yet)."""
    held = set(capabilities or ())
    return tuple(ability for name, ability in _KNOWN.items() if name in held)


def abilities_text(capabilities: Iterable[str] | None) -> str:
    """The badges' words, for sorting, searching and screen readers: "vision, tools"."""
    return ", ".join(ability.label for ability in abilities_of(capabilities))
