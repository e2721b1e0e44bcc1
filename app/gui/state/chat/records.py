"""Conversations and messages as frozen values, shared by the store, the state and the views.

Ids are made here (uuid4 hex) rather than by SQLite, so a new chat exists on screen at once and
the disk write can happen later on a worker thread.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.state.chat.tool_calls import ToolCall

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
    think: str = ""  # a thinking model's Think setting (``thinking.THINK_CHOICES``)
    memory: ChatMemory = field(default_factory=ChatMemory)  # past the context (``memory``)


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
    # A regenerated reply and an edited question keep their earlier versions (LM Studio's and
    # ChatGPT's < 1/2 >): this message is the one shown, ``others`` the rest in order,
    # ``version`` its place among all.
    others: tuple[Message, ...] = ()
    version: int = 0
    # a thinking model's reasoning before this reply, apart from ``content``, and how long it
    # took (None while it goes on, or when there was none)
    thinking: str = ""
    thinking_seconds: float | None = None
    tool_calls: tuple[ToolCall, ...] = ()  # the tools this reply called (``tool_calls.py``)
    # of a question's version not shown: the messages that followed it (``branches``)
    branch: tuple[Message, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.error)

    @property
    def can_continue(self) -> bool:
        """A reply cut off by the token limit or by Stop: "Continue" can write more of it (not
        one that called tools: its calls are its answer)."""
        cut = bool(self.stats and self.stats.cut_off)
        return self.role == "assistant" and not self.failed and cut and not self.tool_calls

    @property
    def versions(self) -> tuple[Message, ...]:
        """Every version of this message, in order, each without versions of its own."""
        alone = replace(self, others=(), version=0)
        return (*self.others[: self.version], alone, *self.others[self.version :])

    def showing(self, index: int) -> Message:
        """The same message with version ``index`` (clamped) shown."""
        every = self.versions
        index = max(0, min(index, len(every) - 1))
        return replace(every[index], others=every[:index] + every[index + 1 :], version=index)

    def with_versions(self, earlier: tuple[Message, ...]) -> Message:
        """This message as the newest version after ``earlier`` ones."""
        return replace(self, others=earlier, version=len(earlier))

    def without_shown_version(self) -> Message | None:
        """The message once the shown version is deleted (its neighbour shown); None if it
        was the only one."""
        if not self.others:
            return None
        rest = self.others
        first = replace(rest[0], others=rest[1:], version=0)
        return first.showing(min(self.version, len(rest) - 1))
