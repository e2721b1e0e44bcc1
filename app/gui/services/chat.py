"""Chats: the list, the open conversation, and the streams feeding replies into it.

The network goes through the gateway on the network workers; the history goes to SQLite
through ``ChatHistory`` on the disk worker. The state (``ChatSession``) is updated on the UI
thread and is the truth the views draw; the disk only follows it. A reply
keeps streaming when the user switches to another chat, and is there when they come back.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.item_models.conversations import (
    CONVERSATION_ROLE,
    ConversationFilter,
    ConversationListModel,
)
from localllm.app.gui.services.chat_edits import ChatEdits
from localllm.app.gui.services.chat_history import ChatHistory
from localllm.app.gui.services.chat_memory import ChatMemoryKeeper
from localllm.app.gui.services.chat_tools import ChatTools
from localllm.app.gui.state.chat.errors import explain
from localllm.app.gui.state.chat.export import to_markdown
from localllm.app.gui.state.chat.records import Conversation, Message, new_id
from localllm.app.gui.state.chat.session import ChatSession, Persist
from localllm.app.gui.state.chat.thinking import think_request
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.records import ChatDelta, ChatDone
from localllm.app.gui.workers import Job, Workers

__all__ = ["ChatController"]


class ChatController(ChatEdits, QObject):
    loaded = Signal()  # the chat list has been read from disk
    opened = Signal(object)  # ChatSession | None: the chat on screen changed
    transcript_changed = Signal()  # the open chat's messages changed
    streaming_changed = Signal(bool)
    reply_finished = Signal(object)  # Message (stats, or an error with a hint)
    reply_started = Signal(str, str)  # chat id, the new reply's id
    deleted = Signal(str)  # chat id: what else belongs to it can go too
    exported = Signal(str)  # the Markdown file a chat was written to
    error = Signal(str)

    def __init__(
        self,
        gateway: Gateway,
        net: Workers,
        disk: Workers,
        db_path: Path,
        parent: QObject | None = None,
        tools: ChatTools | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._net, self._disk = gateway, net, disk
        self.tools = tools  # MCP tools offered to models that call tools (``chat_tools.py``)
        if tools is not None:
            tools.bind(self._ask, self._change, lambda: self.session)
        self._history = ChatHistory(disk, db_path, self._report)
        self.data_dir = db_path.parent  # where the chats are kept (the Settings page shows it)
        self.conversations = ConversationListModel(parent=self)
        self.conversations.edited.connect(lambda c: self._apply(c, touch=False))
        self.filter = ConversationFilter(self)
        self.filter.setSourceModel(self.conversations)
        self.session: ChatSession | None = None
        self.default_model = ""
        # the num_ctx of a chat that sets none (``ModelLibrary.chat_context``; None: send none),
        # known at once, or once the model's details are in (``with_chat_context``)
        self.context_for: Callable[[str], int | None] = lambda _model: None
        self.context_ready: Callable[[str, Callable[[int | None], None]], None] = (
            lambda _model, then: then(None)
        )
        self._live: dict[str, tuple[ChatSession, Job]] = {}
        self._opening = ""
        self._search = ""
        self.memory = ChatMemoryKeeper(
            gateway, net, self.change_memory, self, lambda model: self.context_for(model)
        )
        self.memory.failed.connect(self.error.emit)

    # the list

    def load(self) -> None:
        self._history.conversations(self._listed)

    def new_chat(self, model: str = "") -> None:
        """Start a chat (reusing the empty one on screen rather than piling up empty chats)."""
        session = self.session
        if session is not None and not session.messages and not session.streaming:
            if model and model != session.conversation.model:
                self._write(session.update(replace(session.conversation, model=model)))
            return self.opened.emit(session)
        now = time.time()
        conversation = Conversation(
            new_id(), model=model or self.default_model, created_at=now, updated_at=now
        )
        self.conversations.add(conversation)
        self._history.save_conversation(conversation)
        self._show(ChatSession(conversation))

    def open(self, conversation_id: str) -> None:
        if self.session is not None and self.session.conversation.id == conversation_id:
            return
        if conversation_id in self._live:
            return self._show(self._live[conversation_id][0])
        conversation = self.conversations.conversation(conversation_id)
        if conversation is None:
            return
        self._opening = conversation_id
        self._history.messages(
            conversation_id, lambda messages: self._loaded_messages(conversation, messages)
        )

    def delete(self, conversation_id: str) -> None:
        live = self._live.pop(conversation_id, None)
        if live is not None:
            live[1].cancel()
        self.conversations.remove(conversation_id)
        self._history.delete(conversation_id)
        self.deleted.emit(conversation_id)
        if self.session is not None and self.session.conversation.id == conversation_id:
            self.session = None
            self.open_first()

    def export(self, conversation_id: str, path: Path) -> None:
        """Write the chat as Markdown to ``path`` (read and written on the disk worker);
        ``exported`` says where when it is done, ``error`` why not."""
        conversation = self.conversations.conversation(conversation_id)
        if conversation is None:
            return

        def write(messages: list[Message]) -> None:
            text = to_markdown(conversation, messages)
            self._disk.call(
                lambda: Path(path).write_text(text, encoding="utf-8"),
                lambda _n: self.exported.emit(str(path)),
                lambda e: self.error.emit(f"Could not export the chat: {e}"),
            )

        self._history.messages(conversation_id, write)

    def search(self, text: str) -> None:
        self._search = text
        self.filter.set_query(text)
        if text.strip():
            self._history.search(text, lambda ids: self._searched(text, ids))

    # the conversation

    def send(self, text: str, images: tuple[Path, ...] = (), context: str = "") -> bool:
        """Ask in the open chat; False (with ``error``) when it cannot be sent now.
        Image files are read and encoded on the disk worker. ``context`` (passages from the
        chat's documents) goes with this question only, in the system prompt."""
        if self.session is None:
            self.new_chat()
        session = self.session
        if not images:
            return self._ask(lambda s: s.send(text), session, context)
        if not self._can_ask(session):
            return False
        self._disk.call(
            lambda: tuple(base64.b64encode(Path(p).read_bytes()).decode() for p in images),
            lambda encoded: self._ask(lambda s: s.send(text, encoded), session, context),
            self._report,
        )
        return True

    def regenerate(self, context: str = "", load_anyway: bool = False) -> bool:
        """A new version of the last reply (the earlier ones stay, "< 1/2 >"); ``load_anyway``:
        load the model even where the daemon's memory plan says it does not fit (this reply
        only)."""
        extra = {"load_anyway": True} if load_anyway else {}
        return self._ask(lambda s: s.regenerate(), context=context, extra=extra)

    def continue_reply(self, message_id: str, context: str = "") -> bool:
        """Write more of a reply that the token limit or Stop cut off."""
        return self._ask(lambda s: s.continue_reply(message_id), context=context)

    def delete_message(self, message_id: str) -> bool:
        return self._change(lambda s: s.delete(message_id))

    def show_version(self, message_id: str, version: int) -> bool:
        return self._change(lambda s: s.show_version(message_id, version))

    def edit(self, message_id: str, text: str, context: str = "") -> bool:
        return self._ask(lambda s: s.edit(message_id, text), context=context)

    def stop(self) -> None:
        session = self.session
        if session is None or not session.streaming:
            return
        live = self._live.pop(session.conversation.id, None)
        if live is not None:
            live[1].cancel()
        self._finished(session, session.stop())

    def shutdown(self) -> None:
        """Keep what has streamed so far; the disk worker writes it before closing."""
        for session, job in list(self._live.values()):
            job.cancel()
            persist = session.stop()
            if persist is not None:  # None only for a session no longer streaming
                self._write(persist)
        self._live.clear()
        self._history.close()

    # internals

    def _can_ask(self, session: ChatSession | None) -> bool:
        if session is None:
            return False
        if not session.conversation.model:
            self.error.emit("Pick a model for this chat first (top of the chat).")
            return False
        if session.streaming:
            self.error.emit("A reply is still coming; stop it first (Esc).")
            return False
        return True

    def _ask(
        self,
        change: Callable[[ChatSession], Persist],
        session=None,
        context: str = "",
        extra: dict[str, Any] | None = None,
    ) -> bool:
        """``extra``: options for this request only, over the chat's own."""
        session = session or self.session
        if not self._can_ask(session):
            return False
        try:
            persist = change(session)
        except (RuntimeError, ValueError) as exc:
            self.error.emit(str(exc))
            return False
        self._write(persist)
        self._stream(session, context, extra or {})
        return True

    def _change(self, change: Callable[[ChatSession], Persist], session=None) -> bool:
        """A change that asks the model nothing (delete, flip versions, a tool's answer)."""
        session = session or self.session
        if session is None:
            return False
        if session.streaming:
            self.error.emit("A reply is still coming; stop it first (Esc).")
            return False
        try:
            persist = change(session)
        except ValueError as exc:
            self.error.emit(str(exc))
            return False
        self._write(persist)
        self.transcript_changed.emit()
        return True

    def _stream(
        self, session: ChatSession, context: str = "", extra: dict[str, Any] | None = None
    ) -> None:
        reply_id, c = session.reply_id, session.conversation
        self.reply_started.emit(c.id, reply_id)
        self.transcript_changed.emit()
        self.streaming_changed.emit(True)

        def start(context_length: int | None) -> None:
            if reply_id is not None and session.reply_id == reply_id:  # not stopped meanwhile
                self._start(session, reply_id, context, context_length, extra or {})

        self.context_ready(c.model, start)

    def _start(
        self,
        session: ChatSession,
        reply_id: str,
        context: str,
        context_length: int | None,
        extra: dict[str, Any],
    ) -> None:
        c = session.conversation
        turns = session.turns(context)
        think, truncate = think_request(c.think), c.memory.truncates
        offer = self.tools.offer(c.model, session) if self.tools is not None else dict
        options = {**c.options.to_options(), **extra}
        if "num_ctx" not in options and context_length:
            options["num_ctx"] = context_length
        job = self._net.stream(
            lambda: self._gateway.chat(
                c.model, turns, options, think=think, truncate=truncate, **offer()
            ),
            lambda event: self._event(session, reply_id, event),
            lambda _: self._ended(session, reply_id),
            lambda exc: self._failed(session, reply_id, exc),
        )
        self._live[c.id] = (session, job)

    def _event(self, session: ChatSession, reply_id: str, event: ChatDelta | ChatDone) -> None:
        persist = session.add(reply_id, event)
        if persist is not None:
            self._finished(session, persist)
        elif session is self.session:
            self.transcript_changed.emit()

    def _failed(self, session: ChatSession, reply_id: str, error: Exception) -> None:
        """In place where the reply would have been; a failed continuation leaves the reply
        as it was, so the status line says why."""
        continuing = session.continuing and session.reply_id == reply_id
        self._finished(session, session.fail(reply_id, error))
        if continuing and session is self.session:
            self.error.emit("Could not continue: " + " ".join(explain(error)).strip())

    def _ended(self, session: ChatSession, reply_id: str) -> None:
        if session.reply_id == reply_id:  # the stream ended without its final chunk
            self._finished(session, session.stop())

    def _finished(self, session: ChatSession, persist: Persist | None) -> None:
        self._live.pop(session.conversation.id, None)
        if persist is None:
            return
        self._write(persist)
        self.memory.after_reply(session)
        if session is self.session:
            self.transcript_changed.emit()
            self.streaming_changed.emit(False)
            self.reply_finished.emit(session.messages[-1])
        if self.tools is not None:
            self.tools.after_reply(session)

    def _write(self, persist: Persist) -> None:
        if persist.conversation is not None:
            self.conversations.update(persist.conversation)
            self._history.save(persist)

    def _listed(self, conversations: list[Conversation]) -> None:
        self.conversations.reset(conversations)
        self.loaded.emit()

    def _loaded_messages(self, conversation: Conversation, messages: list[Message]) -> None:
        if self._opening == conversation.id:
            current = self.conversations.conversation(conversation.id) or conversation
            self._show(ChatSession(current, messages))

    def open_first(self) -> None:
        if self.conversations.rowCount():
            self.open(self.conversations.index(0, 0).data(CONVERSATION_ROLE).id)
        else:
            self.opened.emit(None)

    def _show(self, session: ChatSession) -> None:
        self.session = session
        self._opening = ""
        self.opened.emit(session)
        self.streaming_changed.emit(session.streaming)

    def _searched(self, text: str, ids: set[str]) -> None:
        if text == self._search:
            self.filter.set_query(text, ids)

    def _report(self, error: Any) -> None:
        self.error.emit(str(error))
