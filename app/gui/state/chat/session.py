"""One conversation in progress: send, stream, stop, regenerate, edit and resend.

Qt-free and synchronous: the controller feeds it stream events and writes the ``Persist`` it
returns to disk on the disk worker. Each reply has an id, and events for any other reply are
ignored, so a stream that was stopped but still trickles in can never corrupt the next one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from app.gui.state.chat.records import DEFAULT_TITLE, Conversation, Message, ReplyStats, new_id
from app.gui.state.gateway import ChatTurn, GatewayError
from app.gui.state.records import ChatDelta, ChatDone

__all__ = ["ChatBusy", "ChatSession", "Persist", "title_from"]

_TITLE_LENGTH = 48


class ChatBusy(RuntimeError):
    """A reply is still streaming; stop it first."""


@dataclass(frozen=True, slots=True)
class Persist:
    """What to write after a change: the conversation, a cut, and messages by position."""

    conversation: Conversation | None = None
    truncate_from: int | None = None
    messages: tuple[tuple[int, Message], ...] = ()


def title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TITLE_LENGTH else line[: _TITLE_LENGTH - 1].rstrip() + "…"


class ChatSession:
    def __init__(
        self,
        conversation: Conversation,
        messages: Iterable[Message] = (),
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        self._conversation = conversation
        self._messages = list(messages)
        self._clock, self._wall = clock, wall
        self._reply_id: str | None = None
        self._parts: list[str] = []
        self._started = 0.0
        self._first_token: float | None = None

    @property
    def conversation(self) -> Conversation:
        return self._conversation

    @property
    def streaming(self) -> bool:
        return self._reply_id is not None

    @property
    def reply_id(self) -> str | None:
        return self._reply_id

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation as shown, the reply in progress last."""
        if self._reply_id is None:
            return tuple(self._messages)
        pending = Message(self._reply_id, "assistant", "".join(self._parts))
        return (*self._messages, pending)

    def turns(self) -> tuple[ChatTurn, ...]:
        """What the model gets: the system prompt and every reply that did not fail."""
        system = self._conversation.system_prompt.strip()
        head = (ChatTurn("system", system),) if system else ()
        body = tuple(ChatTurn(m.role, m.content, m.images) for m in self._messages if not m.failed)
        return head + body

    def update(self, conversation: Conversation, touch: bool = True) -> Persist:
        """New settings (model, system prompt, parameters, title) for this chat; ``touch``
        moves it up the list (a rename does not)."""
        stamp = self._wall() if touch else self._conversation.updated_at
        self._conversation = replace(conversation, updated_at=stamp)
        return Persist(self._conversation)

    def send(self, text: str, images: tuple[str, ...] = ()) -> Persist:
        self._ensure_idle()
        user = Message(new_id(), "user", text, images, created_at=self._wall())
        self._messages.append(user)
        if self._conversation.title == DEFAULT_TITLE and text.strip():
            self._conversation = replace(self._conversation, title=title_from(text))
        self._begin()
        return Persist(self._conversation, None, ((len(self._messages) - 1, user),))

    def regenerate(self) -> Persist:
        """Replace the last reply with a new one."""
        self._ensure_idle()
        cut = len(self._messages)
        while cut and self._messages[cut - 1].role == "assistant":
            cut -= 1
        if cut == 0:
            raise ValueError("there is no message to answer")
        del self._messages[cut:]
        self._begin()
        return Persist(self._conversation, cut)

    def edit(self, message_id: str, text: str) -> Persist:
        """Change one of the user's messages and ask again from there."""
        self._ensure_idle()
        index = next(i for i, m in enumerate(self._messages) if m.id == message_id)
        if self._messages[index].role != "user":
            raise ValueError("only your own messages can be edited")
        edited = replace(self._messages[index], content=text)
        self._messages[index:] = [edited]
        self._begin()
        return Persist(self._conversation, index + 1, ((index, edited),))

    def add(self, reply_id: str, event: ChatDelta | ChatDone) -> Persist | None:
        """Take one stream event; returns what to save once the reply is complete."""
        if reply_id != self._reply_id:
            return None
        if isinstance(event, ChatDone):
            return self._finish(event)
        if event.content and self._first_token is None:
            self._first_token = self._clock()
        self._parts.append(event.content)
        return None

    def fail(self, reply_id: str, error: Exception) -> Persist | None:
        """Show the error where the reply would have been, with what to do next."""
        if reply_id != self._reply_id:
            return None
        message = error.message if isinstance(error, GatewayError) else str(error)
        hint = error.hint if isinstance(error, GatewayError) else ""
        return self._finish(None, error=message or type(error).__name__, hint=hint)

    def stop(self) -> Persist | None:
        """Keep what has streamed so far and mark it stopped."""
        if self._reply_id is None:
            return None
        return self._finish(None)

    def _ensure_idle(self) -> None:
        if self._reply_id is not None:
            raise ChatBusy("a reply is still streaming; stop it first")

    def _begin(self) -> None:
        self._reply_id, self._parts = new_id(), []
        self._started, self._first_token = self._clock(), None

    def _finish(self, done: ChatDone | None, error: str = "", hint: str = "") -> Persist:
        now = self._clock()
        stats = None if error else ReplyStats.measure(done, self._started, self._first_token, now)
        reply = Message(
            self._reply_id or new_id(),
            "assistant",
            "".join(self._parts),
            stats=stats,
            error=error,
            hint=hint,
            created_at=self._wall(),
        )
        self._messages.append(reply)
        self._reply_id, self._parts = None, []
        self._conversation = replace(self._conversation, updated_at=self._wall())
        return Persist(self._conversation, None, ((len(self._messages) - 1, reply),))
