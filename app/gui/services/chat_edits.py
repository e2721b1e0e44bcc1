"""A chat's settings and title changed without asking the model anything.

The open or streaming session of a chat is the truth about it (``ChatController``): a change
goes through it, or its next save would put the old values back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import SignalInstance

from localllm.app.gui.item_models.conversations import ConversationListModel
from localllm.app.gui.services.chat_history import ChatHistory
from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.records import ChatOptions, Conversation
from localllm.app.gui.state.chat.session import ChatSession, Persist
from localllm.app.gui.workers import Job

__all__ = ["ChatEdits"]


class ChatEdits:
    """Part of ``ChatController``: it gives ``_live``, ``session``, ``conversations``,
    ``_history``, ``_write`` and ``transcript_changed``."""

    _live: dict[str, tuple[ChatSession, Job]]
    session: ChatSession | None
    conversations: ConversationListModel
    _history: ChatHistory
    _write: Callable[[Persist], None]
    transcript_changed: SignalInstance

    def rename(self, conversation_id: str, title: str) -> None:
        conversation = self.conversations.conversation(conversation_id)
        if conversation is not None and title.strip():
            self._apply(replace(conversation, title=title.strip()), touch=False)

    def update_settings(self, conversation: Conversation) -> None:
        """A new model, system prompt or parameters for a chat."""
        self._apply(conversation)

    def apply_settings(self, conversation_id: str, system_prompt: str, options: ChatOptions):
        """The settings panel's edit, merged into the chat as it is now: the panel's copy of
        the chat may be older than its title (given by the first reply) or its model."""
        current = self._current(conversation_id)
        if current is not None:
            self._apply(replace(current, system_prompt=system_prompt, options=options))

    def set_think(self, conversation_id: str, think: str) -> None:
        """A chat's Think setting (``thinking.THINK_CHOICES``), for the replies to come."""
        current = self._current(conversation_id)
        if current is not None and current.think != think:
            self._apply(replace(current, think=think))

    def change_memory(
        self, conversation_id: str, change: Callable[[ChatMemory], ChatMemory]
    ) -> None:
        """A long chat's choice or state (``memory.ChatMemory``), for the replies to come."""
        current = self._current(conversation_id)
        if current is not None:
            self._apply(replace(current, memory=change(current.memory)), touch=False)
            if self.session is not None and self.session.conversation.id == conversation_id:
                self.transcript_changed.emit()  # a new summary shows at once

    def _apply(self, conversation: Conversation, touch: bool = True) -> None:
        """Settings or a title for a chat; an open or streaming session must hear of it too,
        or its next save would put the old values back."""
        live = self._live.get(conversation.id)
        session = live[0] if live else self.session
        if session is not None and session.conversation.id == conversation.id:
            self._write(session.update(conversation, touch=touch))
        else:
            self.conversations.update(conversation)
            self._history.save_conversation(conversation)

    def _current(self, conversation_id: str) -> Conversation | None:
        """A chat as it is now: its streaming or open session knows best."""
        live = self._live.get(conversation_id)
        session = live[0] if live else self.session
        if session is not None and session.conversation.id == conversation_id:
            return session.conversation
        return self.conversations.conversation(conversation_id)
