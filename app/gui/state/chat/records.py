"""Conversations and messages as frozen values, shared by the store, the state and the views.

Ids are made here (uuid4 hex) rather than by SQLite, so a new chat exists on screen at once and
the disk write can happen later on a worker thread.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from app.gui.state.records import ChatDone

__all__ = ["DEFAULT_TITLE", "ChatOptions", "Conversation", "Message", "ReplyStats", "new_id"]

DEFAULT_TITLE = "New chat"


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """Per-chat parameters by their Ollama option names; None means "the model's default"."""

    temperature: float | None = None
    num_ctx: int | None = None
    num_predict: int | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None
    seed: int | None = None
    num_gpu: int | None = None  # layers on the GPU; -1 all of them

    def to_options(self) -> dict[str, Any]:
        return {k: v for k, v in self.to_json().items() if v is not None}

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.__slots__}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ChatOptions:
        data = data or {}
        return cls(**{key: data.get(key) for key in cls.__slots__})


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    title: str = DEFAULT_TITLE
    model: str = ""
    system_prompt: str = ""
    options: ChatOptions = field(default_factory=ChatOptions)
    created_at: float = 0.0
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class ReplyStats:
    """What users read after each reply: speed, time to first token, why it stopped."""

    tokens: int
    tokens_per_second: float | None
    first_token_seconds: float | None
    total_seconds: float
    prompt_tokens: int = 0
    done_reason: str = "stop"

    @classmethod
    def measure(
        cls, done: ChatDone | None, started: float, first_token: float | None, finished: float
    ) -> ReplyStats:
        """Speed from the daemon's own eval timings; latency from our clock."""
        done = done or ChatDone(done_reason="stopped")
        speed = done.eval_count / (done.eval_duration / 1e9) if done.eval_duration > 0 else None
        ttft = first_token - started if first_token is not None else None
        return cls(
            done.eval_count,
            speed,
            ttft,
            finished - started,
            done.prompt_eval_count,
            done.done_reason or "stop",
        )

    def summary(self) -> str:
        parts = []
        if self.tokens_per_second is not None:
            parts.append(f"{self.tokens_per_second:.1f} tok/s")
        if self.tokens:
            parts.append(f"{self.tokens} token{'s' if self.tokens != 1 else ''}")
        if self.first_token_seconds is not None:
            parts.append(f"first token {self.first_token_seconds * 1000:.0f} ms")
        if self.done_reason == "length":
            parts.append("stopped at the token limit")
        elif self.done_reason == "stopped":
            parts.append("stopped")
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "tokens_per_second": self.tokens_per_second,
            "first_token_seconds": self.first_token_seconds,
            "total_seconds": self.total_seconds,
            "prompt_tokens": self.prompt_tokens,
            "done_reason": self.done_reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ReplyStats | None:
        return cls(**data) if data else None


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    role: str  # "user" | "assistant"
    content: str
    images: tuple[str, ...] = ()  # base64, as the daemon takes them
    stats: ReplyStats | None = None
    error: str = ""
    hint: str = ""
    created_at: float = 0.0

    @property
    def failed(self) -> bool:
        return bool(self.error)
