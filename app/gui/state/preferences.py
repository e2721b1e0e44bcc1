"""The app's own preferences (the Settings page), without Qt: the theme and the context length
its chats ask for.

Chats that set no Context length ask for ``context`` tokens (LM Studio starts at about 4k, Ollama
at 4k on most machines), never more than the model was trained for: a desktop chat rarely needs
more, and each token of context costs memory in every slot. 0 leaves it to the daemon, which
sizes the context from the trained length and free memory.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONTEXT_CHOICES", "DEFAULT_CONTEXT", "Preferences", "chat_context"]

DEFAULT_CONTEXT = 4096
CONTEXT_CHOICES = (
    (2048, "2,048 tokens"),
    (4096, "4,096 tokens (recommended)"),
    (8192, "8,192 tokens"),
    (16384, "16,384 tokens"),
    (32768, "32,768 tokens"),
    (0, "What fits in free memory (the daemon decides)"),
)


@dataclass(frozen=True, slots=True)
class Preferences:
    theme: str = "system"  # "system" | "light" | "dark"
    context: int = DEFAULT_CONTEXT  # 0: the daemon decides

    @classmethod
    def read(cls, theme: object, context: object) -> Preferences:
        """From stored text; anything unexpected falls back to the default."""
        themes = ("system", "light", "dark")
        text = str(context or "")
        number = int(text) if text.isdigit() else DEFAULT_CONTEXT
        return cls(
            theme=str(theme) if str(theme) in themes else "system",
            context=number if number in dict(CONTEXT_CHOICES) else DEFAULT_CONTEXT,
        )


def chat_context(preferred: int, trained: int | None, modelfile: int | None) -> int | None:
    """The context a chat that sets none asks for: the model's own Modelfile value wins (None:
    send nothing), then the preference within what the model was trained for; None when the
    preference leaves it to the daemon."""
    if modelfile or not preferred:
        return None
    return min(preferred, trained) if trained else preferred
