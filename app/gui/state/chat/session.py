"""One conversation in progress: send, stream, stop, regenerate (keeping every version),
continue a cut-off reply, edit and resend (keeping the earlier words and what followed them),
delete.

Qt-free and synchronous: the controller feeds it stream events and writes the ``Persist`` it
returns to disk on the disk worker. Each reply has an id, and events for any other reply are
ignored, so a stream that was stopped but still trickles in can never corrupt the next one. A
thinking model's reasoning is kept apart from the reply's text, with how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from localllm.app.gui.state.chat.branches import edited, switched, without_version
from localllm.app.gui.state.chat.context_turns import with_context
from localllm.app.gui.state.chat.errors import explain
from localllm.app.gui.state.chat.memory import memory_start
from localllm.app.gui.state.chat.memory_turns import system_turns
from localllm.app.gui.state.chat.records import DEFAULT_TITLE, Conversation, Message, new_id
from localllm.app.gui.state.chat.stats import ReplyMeter, ReplyStats
from localllm.app.gui.state.chat.thinking import ThinkingClock
from localllm.app.gui.state.chat.tool_calls import ToolCall, close_waiting, message_turns
from localllm.app.gui.state.gateway import ChatTurn
from localllm.app.gui.state.records import ChatDelta, ChatDone

__all__ = ["ChatBusy", "ChatSession", "Persist", "title_from"]

_TITLE_LENGTH = 48


class ChatBusy(RuntimeError):
    """A reply is still streaming; stop it first."""


@dataclass(frozen=True, slots=True)
class Persist:
    """What to write after a change: the conversation, a cut, a removed message, and messages
    by position."""

    conversation: Conversation | None = None
    truncate_from: int | None = None
    messages: tuple[tuple[int, Message], ...] = ()
    removed: int | None = None  # the position of a deleted message (later ones move up)


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
        self._thoughts: list[str] = []
        self._calls: list[ToolCall] = []
        self._meter = ReplyMeter(clock)
        self._thinking = ThinkingClock(clock)
        # what the reply in progress builds on: the reply it is a new version of, or the
        # cut-off reply it continues (``_continuing``); None for a plain answer
        self._previous: Message | None = None
        self._continuing = False
        self._context = ""  # the documents' passages the reply in progress was given

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
    def continuing(self) -> bool:
        """The reply in progress continues a cut-off one (rather than answering anew)."""
        return self.streaming and self._continuing

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation as shown, the reply in progress last."""
        if self._reply_id is None:
            return tuple(self._messages)
        return (*self._messages, self._reply("".join(self._parts)))

    def live_stats(self) -> ReplyStats | None:
        """The reply in progress measured so far (None when nothing streams)."""
        return self._meter.live() if self.streaming else None

    def turns(self, context: str = "") -> tuple[ChatTurn, ...]:
        """What the model gets: the system prompt (with ``context``, the documents' passages
        for this reply, and the summary of what it no longer sees) and every reply that did
        not fail; when continuing, the cut-off reply last, for the model to carry on from."""
        self._context = context
        return tuple(turn for turn, _ in self._sent())

    def _sent(self) -> list[tuple[ChatTurn, str]]:
        """The turns sent, each with its message's id ("" for the system prompt): the daemon
        says where the model's memory starts by an index into these."""
        head = system_turns(self._conversation.system_prompt, self._conversation.memory)
        sent = [(turn, "") for turn in with_context(head, self._context)]
        sent += [(turn, m.id) for m in self._messages if not m.failed for turn in message_turns(m)]
        previous = self._previous
        if self.continuing and previous is not None:
            turn = ChatTurn("assistant", previous.content, (), previous.thinking)
            sent.append((turn, previous.id))
        return sent

    def update(self, conversation: Conversation, touch: bool = True) -> Persist:
        """New settings (model, system prompt, parameters, title) for this chat; ``touch``
        moves it up the list (a rename does not)."""
        stamp = self._wall() if touch else self._conversation.updated_at
        self._conversation = replace(conversation, updated_at=stamp)
        return Persist(self._conversation)

    def send(self, text: str, images: tuple[str, ...] = ()) -> Persist:
        """Ask; tool calls still waiting for approval count as denied (the model is told)."""
        self._ensure_idle()
        closed = close_waiting(self._messages)
        first = not any(m.role == "user" for m in self._messages)
        user = Message(new_id(), "user", text, images, created_at=self._wall())
        self._messages.append(user)
        if first and self._conversation.title == DEFAULT_TITLE and text.strip():
            self._conversation = replace(self._conversation, title=title_from(text))
        self._begin()
        return Persist(self._conversation, None, (*closed, (len(self._messages) - 1, user)))

    def regenerate(self) -> Persist:
        """A new version of the last reply; the earlier ones stay (failed ones go)."""
        self._ensure_idle()
        if not self._messages:
            raise ValueError("there is no message to answer")
        previous = None
        if self._messages[-1].role == "assistant":
            previous = self._messages.pop()
            if not self._messages:
                self._messages.append(previous)
                raise ValueError("there is no message to answer")
        self._begin(previous)
        return Persist(self._conversation)

    def continue_reply(self, message_id: str) -> Persist:
        """Write more of a reply that the token limit or Stop cut off, appended to it."""
        self._ensure_idle()
        last = self._messages[-1] if self._messages else None
        if last is None or last.id != message_id or not last.can_continue:
            raise ValueError("only the last reply can be continued, once it has been cut off")
        self._messages.pop()
        self._begin(last, continuing=True)
        return Persist(self._conversation)

    def edit(self, message_id: str, text: str) -> Persist:
        """Ask again from one of the user's messages, changed: the new words are a new version
        of it, and the old ones keep what followed them (``branches``)."""
        self._ensure_idle()
        index = self._index(message_id)
        if self._messages[index].role != "user":
            raise ValueError("only your own messages can be edited")
        self._messages = edited(self._messages, index, text, self._wall())
        self._begin()
        return Persist(self._conversation, index + 1, ((index, self._messages[index]),))

    def delete(self, message_id: str) -> Persist:
        """Forget one message; of a reply with versions, only the version shown; of a question
        with versions, the version shown and what followed it."""
        self._ensure_idle()
        index = self._index(message_id)
        if self._messages[index].role == "user" and self._messages[index].others:
            self._messages = without_version(self._messages, index)
            return self._rewritten_from(index)
        rest = self._messages[index].without_shown_version()
        if rest is not None:
            self._messages[index] = rest
            return Persist(self._conversation, None, ((index, rest),))
        del self._messages[index]
        return Persist(self._conversation, removed=index)

    def show_version(self, message_id: str, version: int) -> Persist:
        """Flip a reply to another of its versions (the model then sees that one); a question,
        with what followed that version of it."""
        self._ensure_idle()
        index = self._index(message_id)
        if self._messages[index].role == "user":
            self._messages = switched(self._messages, index, version)
            return self._rewritten_from(index)
        shown = self._messages[index].showing(version)
        self._messages[index] = shown
        return Persist(self._conversation, None, ((index, shown),))

    def add(self, reply_id: str, event: ChatDelta | ChatDone) -> Persist | None:
        """Take one stream event; returns what to save once the reply is complete."""
        if reply_id != self._reply_id:
            return None
        if isinstance(event, ChatDone):
            return self._finish(event)
        if event.thinking:
            self._thinking.thought()
            self._thoughts.append(event.thinking)
        if event.content:
            self._thinking.answered()
            self._parts.append(event.content)
        for name, arguments in event.tool_calls:
            self._calls.append(ToolCall(new_id(), name, arguments))
        self._meter.piece(event.content or event.thinking)
        return None

    def fail(self, reply_id: str, error: Exception) -> Persist | None:
        """Show the error where the reply would have been, with what to do next. A failed
        continuation keeps the reply as it was (plus what came): the controller reports it."""
        if reply_id != self._reply_id:
            return None
        if self._continuing:
            return self._finish(None, keep_stats=True)
        message, hint = explain(error)
        return self._finish(None, error=message, hint=hint)

    def stop(self) -> Persist | None:
        """Keep what has streamed so far and mark it stopped."""
        if self._reply_id is None:
            return None
        return self._finish(None)

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """The last reply's tool calls that wait for the user's approval."""
        last = self._messages[-1] if self._messages and not self.streaming else None
        return tuple(c for c in last.tool_calls if c.status == "pending") if last else ()

    def settle(self, call_id: str, status: str, result: str = "") -> Persist:
        """A tool call of the last reply approved (``running``), answered, failed or denied."""
        last = self._messages[-1] if self._messages else None
        if last is None or not any(c.id == call_id for c in last.tool_calls):
            raise ValueError("that tool call is no longer waiting")
        calls = tuple(c.settle(status, result) if c.id == call_id else c for c in last.tool_calls)
        self._messages[-1] = replace(last, tool_calls=calls)
        return Persist(self._conversation, None, ((len(self._messages) - 1, self._messages[-1]),))

    def resume(self) -> Persist:
        """Let the model go on once every tool call of the last reply has its answer."""
        self._ensure_idle()
        last = self._messages[-1] if self._messages else None
        if last is None or not last.tool_calls or not all(c.settled for c in last.tool_calls):
            raise ValueError("the last reply's tool calls are not all answered yet")
        self._begin()
        return Persist(self._conversation)

    def _rewritten_from(self, index: int) -> Persist:
        """Write the messages from ``index`` on anew (what follows a question changed)."""
        after = tuple(enumerate(self._messages))[index:]
        return Persist(self._conversation, index + 1, after)

    def _index(self, message_id: str) -> int:
        index = next((i for i, m in enumerate(self._messages) if m.id == message_id), None)
        if index is None:
            raise ValueError("that message is no longer in this chat")
        return index

    def _ensure_idle(self) -> None:
        if self._reply_id is not None:
            raise ChatBusy("a reply is still streaming; stop it first")

    def _begin(self, previous: Message | None = None, continuing: bool = False) -> None:
        self._reply_id, self._parts, self._thoughts = new_id(), [], []
        self._calls = []
        self._meter = ReplyMeter(self._clock)
        earlier = previous.thinking_seconds if continuing and previous is not None else None
        self._thinking = ThinkingClock(self._clock, earlier or 0.0)
        self._previous, self._continuing = previous, continuing

    def _reply(self, text: str, stats=None, error: str = "", hint: str = "") -> Message:
        """The reply in progress (or just finished) as a message."""
        previous = self._previous
        thinking = "".join(self._thoughts)
        seconds = self._thinking.seconds()
        if self._continuing and previous is not None:  # its numbers so far until new ones
            return replace(
                previous,
                content=previous.content + text,
                stats=stats or previous.stats,
                error=error,
                hint=hint,
                thinking=previous.thinking + thinking,
                thinking_seconds=seconds,
            )
        reply = Message(
            self._reply_id or new_id(),
            "assistant",
            text,
            stats=stats,
            error=error,
            hint=hint,
            created_at=self._wall(),
            thinking=thinking,
            thinking_seconds=seconds,
            tool_calls=tuple(self._calls),
        )
        if previous is None:
            return reply
        return reply.with_versions(tuple(v for v in previous.versions if not v.failed))

    def _finish(
        self, done: ChatDone | None, error: str = "", hint: str = "", keep_stats: bool = False
    ) -> Persist:
        earlier = self._previous.stats if self._continuing and self._previous else None
        if done is not None:  # where the model's memory started, for this request
            start = memory_start([i for _, i in self._sent()], done.kept_from)
            memory = self._conversation.memory.with_start(start)
            self._conversation = replace(self._conversation, memory=memory)
        if keep_stats:
            stats = earlier
        elif error:
            stats = None
        else:
            stats = self._meter.finish(done).after(earlier)
        reply = self._reply("".join(self._parts), stats, error, hint)
        self._messages.append(reply)
        self._reply_id, self._parts, self._thoughts = None, [], []
        self._previous, self._continuing = None, False
        self._conversation = replace(self._conversation, updated_at=self._wall())
        return Persist(self._conversation, None, ((len(self._messages) - 1, reply),))
