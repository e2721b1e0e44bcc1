"""What a chat gets for each setting it leaves to "model default", as the daemon decides it.

The daemon takes a request's options over the model's Modelfile parameters over its own
defaults. The app asks for its preferred context (``preferences.chat_context``) unless the
Modelfile sets one; left to the daemon, the context length it starts a model with is what its
``show`` reports (``runs_with``: sized from the trained context and free memory); without that
answer, the daemon's fixed ``LOCALLLM_CONTEXT_LENGTH`` (read from the same settings), never more
than the model was trained for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from localllm.app.gui.state.preferences import chat_context
from localllm.app.gui.state.records import ModelDetails

__all__ = ["DAEMON_TEMPERATURE", "ModelDefaults", "modelfile_parameters"]

DAEMON_TEMPERATURE = 0.8  # the daemon's sampling default (Ollama's), when a model sets none
CONTEXT_FLOOR = 2048  # the daemon's shortest sized context (daemon.scheduler.context_size)


def modelfile_parameters(text: str) -> dict[str, object]:
    """``/api/show``'s parameters text (``key   value`` lines, JSON values) as a dict; a key
    given on several lines (``stop``) keeps its last value."""
    found: dict[str, object] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if not key or not value.strip():
            continue
        try:
            found[key] = json.loads(value.strip())
        except ValueError:
            found[key] = value.strip()
    return found


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True, slots=True)
class ModelDefaults:
    temperature: float
    context: int  # the context length a chat runs at when it does not set one
    trained_context: int | None  # what the model was trained for (its GGUF says)
    reply_limit: int | None  # None: until the model stops or the context is full

    @classmethod
    def of(cls, details: ModelDetails, daemon_context: int, preferred: int = 0) -> ModelDefaults:
        """``preferred``: the context the app asks for (0: the daemon decides)."""
        parameters = modelfile_parameters(details.parameters)
        trained = details.context_length
        own_context = _number(parameters.get("num_ctx"))
        asked = chat_context(preferred, trained, int(own_context) if own_context else None)
        context = int(own_context) if own_context else daemon_context
        if not own_context and trained:
            context = min(context or CONTEXT_FLOOR, trained)
        context = details.runs_at or context or CONTEXT_FLOOR  # the daemon's own word first
        context = asked or context  # what the app asks for is what it runs at
        temperature = _number(parameters.get("temperature"))
        limit = _number(parameters.get("num_predict"))
        return cls(
            DAEMON_TEMPERATURE if temperature is None else temperature,
            context,
            trained,
            int(limit) if limit is not None and limit > 0 else None,
        )

    def context_text(self) -> str:
        """'runs at 4,096 of 32,768 tokens' (or just the length when training is unknown)."""
        if self.trained_context and self.trained_context != self.context:
            return f"runs at {self.context:,} of {self.trained_context:,} tokens"
        return f"{self.context:,} tokens"
