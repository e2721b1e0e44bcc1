"""Which catalog models a search names: every word typed, anywhere in the model's name, what it
is for, its repository, kind, size and abilities, in any case ("qwen coder" finds
``qwen2.5-coder:7b``, which neither "qwen coder" as one string nor a match per column did)."""

from __future__ import annotations

from localllm.app.gui.state.records import CatalogModel

__all__ = ["matches"]


def matches(model: CatalogModel, query: str) -> bool:
    """Whether every word of ``query`` is in ``model``'s text; an empty query matches all."""
    text = " ".join(
        (
            model.name,
            model.description,
            model.repo,
            model.kind,
            model.parameter_size,
            *sorted(model.capabilities),
        )
    ).casefold()
    return all(word in text for word in query.casefold().split())
