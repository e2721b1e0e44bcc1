"""Which model new chats use and which chat is on screen, decided without Qt.

The window only wires signals here and shows the results, so these rules are tested with plain
objects: the default model stays while it is installed (else the first installed one), a
finished download becomes the default while no chat has a model, the empty chat on screen gets
a model once there is one, and at start the chat last open comes back (else the first chat,
else a new one). Both choices outlive a run in a key/value store (``QSettings`` in the app).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from localllm.app.gui.state.chat.records import Conversation
from localllm.app.gui.state.chat.session import ChatSession

__all__ = [
    "LAST_CHAT_KEY",
    "MODEL_KEY",
    "ChatChoice",
    "ChatService",
    "ConversationLookup",
    "Remembered",
]

MODEL_KEY = "chat/model"  # the default model of new chats
LAST_CHAT_KEY = "chat/last"  # the id of the chat last on screen ("" when none was)


class Remembered(Protocol):
    """Values kept between runs (``QSettings`` satisfies it)."""

    def value(self, key: str, /) -> object: ...

    def setValue(self, key: str, value: object, /) -> None: ...  # Qt's spelling


class ChatService(Protocol):
    """The part of the chat service these choices drive (``ChatController``)."""

    default_model: str

    @property
    def session(self) -> ChatSession | None: ...

    def open(self, conversation_id: str) -> None: ...

    def open_first(self) -> None: ...

    def new_chat(self, model: str = "") -> None: ...


class ConversationLookup(Protocol):
    """The chat list (``ConversationListModel`` satisfies it)."""

    def conversation(self, conversation_id: str) -> Conversation | None: ...

    def rowCount(self) -> int: ...  # Qt's spelling


class ChatChoice:
    """Decides the default model and the chat to open, and remembers both."""

    def __init__(
        self, chat: ChatService, conversations: ConversationLookup, remembered: Remembered
    ) -> None:
        self._chat, self._conversations, self._remembered = chat, conversations, remembered

    def restore(self) -> None:
        """Take the default model from the last run (it is checked once the models are in)."""
        self._chat.default_model = _text(self._remembered.value(MODEL_KEY))

    def save(self) -> None:
        self._remembered.setValue(MODEL_KEY, self._chat.default_model)

    def models_changed(self, names: Sequence[str]) -> str | None:
        """Keep the default model while it is installed, else take the first, and give it to
        the empty chat on screen; returns the default, or None while no model is installed."""
        if not names:
            return None
        chat = self._chat
        if chat.default_model not in names:
            chat.default_model = names[0]
        session = chat.session
        if session is not None and not session.conversation.model and not session.messages:
            chat.new_chat(chat.default_model)
        return chat.default_model

    def download_finished(self, name: str) -> None:
        """A model just pulled is what the user wants next, unless a chat already has one."""
        session = self._chat.session
        if session is None or not session.conversation.model:
            self._chat.default_model = name

    def chat_with(self, name: str) -> None:
        """A chat with ``name``, which new chats use from now on."""
        self._chat.default_model = name
        self._chat.new_chat(name)

    def open_last_chat(self) -> None:
        """At start (the chat list read): the chat last on screen if it is still there, else
        the first chat, else a new one."""
        last = _text(self._remembered.value(LAST_CHAT_KEY))
        if last and self._conversations.conversation(last) is not None:
            self._chat.open(last)
        elif self._conversations.rowCount():
            self._chat.open_first()
        else:
            self._chat.new_chat()

    def remember_chat(self, session: ChatSession | None) -> None:
        self._remembered.setValue(LAST_CHAT_KEY, session.conversation.id if session else "")


def _text(value: object) -> str:
    """A remembered string; a missing or empty value reads as ""."""
    return str(value or "")
