"""The default model and the chat to open (``ChatChoice``), without Qt: a dict stands in for
``QSettings``, a real ``ConversationList`` for the chat list, and a small chat service that
opens real ``ChatSession``s and records what it was asked to do."""

from __future__ import annotations

from dataclasses import replace

from localllm.app.gui.state.chat.conversation_list import ConversationList
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.chat_choice import LAST_CHAT_KEY, MODEL_KEY, ChatChoice


class Remembered:
    """``QSettings``'s two calls over a dict (a missing key reads as None, as in Qt)."""

    def __init__(self, **values: object) -> None:
        self.values: dict[str, object] = dict(values)

    def value(self, key: str, /) -> object:
        return self.values.get(key)

    def setValue(self, key: str, value: object, /) -> None:
        self.values[key] = value


class Chats:
    """The chat list: a real ``ConversationList`` behind the two calls the choice makes."""

    def __init__(self, *conversations: Conversation) -> None:
        self.list = ConversationList(conversations)

    def conversation(self, conversation_id: str) -> Conversation | None:
        return self.list.get(conversation_id)

    def rowCount(self) -> int:
        return len(self.list)


class ChatService:
    """What ``ChatController`` does with the calls, minus history and streaming; ``calls``
    records them in order."""

    def __init__(self, chats: Chats, session: ChatSession | None = None) -> None:
        self.chats, self.session, self.default_model = chats, session, ""
        self.calls: list[tuple[str, str]] = []

    def open(self, conversation_id: str) -> None:
        self.calls.append(("open", conversation_id))
        conversation = self.chats.conversation(conversation_id)
        assert conversation is not None
        self.session = ChatSession(conversation)

    def open_first(self) -> None:
        self.calls.append(("open_first", ""))
        self.session = ChatSession(self.chats.list[0])

    def new_chat(self, model: str = "") -> None:
        self.calls.append(("new_chat", model))
        chosen = model or self.default_model
        session = self.session
        if session is not None and not session.messages:  # the empty chat is reused
            self.session = ChatSession(replace(session.conversation, model=chosen))
            return
        self.session = ChatSession(Conversation(f"new-{len(self.calls)}", model=chosen))


def _choice(
    session: ChatSession | None = None, chats: Chats | None = None, **remembered: object
) -> tuple[ChatChoice, ChatService, Remembered]:
    chat, store = ChatService(chats or Chats(), session), Remembered(**remembered)
    return ChatChoice(chat, chat.chats, store), chat, store


def _said(text: str) -> ChatSession:
    """A chat with a message in it (and no model)."""
    return ChatSession(Conversation("talked"), [Message("m1", "user", text)])


# the default model


def test_the_remembered_model_becomes_the_default_and_is_saved_back():
    choice, chat, store = _choice(**{MODEL_KEY: "qwen3:4b"})
    choice.restore()
    assert chat.default_model == "qwen3:4b"
    chat.default_model = "gemma3:1b"
    choice.save()
    assert store.values[MODEL_KEY] == "gemma3:1b"


def test_nothing_remembered_leaves_no_default_model():
    choice, chat, _store = _choice()
    choice.restore()
    assert chat.default_model == ""


def test_the_default_model_stays_while_it_is_installed():
    choice, chat, _store = _choice()
    chat.default_model = "qwen3:4b"
    assert choice.models_changed(["gemma3:1b", "qwen3:4b"]) == "qwen3:4b"
    assert chat.default_model == "qwen3:4b"


def test_a_default_model_no_longer_installed_gives_way_to_the_first():
    choice, chat, _store = _choice()
    chat.default_model = "removed:7b"
    assert choice.models_changed(["gemma3:1b", "qwen3:4b"]) == "gemma3:1b"
    assert chat.default_model == "gemma3:1b"


def test_no_models_installed_keeps_the_default_and_chooses_nothing():
    choice, chat, _store = _choice(ChatSession(Conversation("empty")))
    chat.default_model = "qwen3:4b"
    assert choice.models_changed([]) is None
    assert chat.default_model == "qwen3:4b"
    assert chat.calls == []


def test_the_empty_chat_on_screen_gets_the_default_model_when_models_appear():
    choice, chat, _store = _choice(ChatSession(Conversation("empty")))
    choice.models_changed(["gemma3:1b"])
    assert chat.calls == [("new_chat", "gemma3:1b")]
    assert chat.session is not None and chat.session.conversation.model == "gemma3:1b"


def test_a_chat_with_a_model_or_with_messages_is_left_as_it_is():
    for session in (ChatSession(Conversation("set", model="qwen3:4b")), _said("hi")):
        choice, chat, _store = _choice(session)
        choice.models_changed(["gemma3:1b"])
        assert chat.calls == []
        assert chat.session is session


def test_no_chat_on_screen_opens_none_when_models_appear():
    choice, chat, _store = _choice()
    assert choice.models_changed(["gemma3:1b"]) == "gemma3:1b"
    assert chat.calls == []


def test_a_finished_download_becomes_the_default_while_no_chat_has_a_model():
    for session in (None, ChatSession(Conversation("empty")), _said("hi")):
        choice, chat, _store = _choice(session)
        chat.default_model = "gemma3:1b"
        choice.download_finished("qwen3:4b")
        assert chat.default_model == "qwen3:4b"


def test_a_finished_download_leaves_the_default_when_the_chat_has_a_model():
    choice, chat, _store = _choice(ChatSession(Conversation("set", model="gemma3:1b")))
    chat.default_model = "gemma3:1b"
    choice.download_finished("qwen3:4b")
    assert chat.default_model == "gemma3:1b"


def test_chatting_with_a_model_makes_it_the_default_and_opens_a_chat_with_it():
    choice, chat, _store = _choice(_said("hi"))
    choice.chat_with("qwen3:4b")
    assert chat.default_model == "qwen3:4b"
    assert chat.calls == [("new_chat", "qwen3:4b")]
    assert chat.session is not None and chat.session.conversation.model == "qwen3:4b"


# the chat that opens at start


def test_the_chat_last_on_screen_opens_again():
    chats = Chats(Conversation("a", updated_at=2), Conversation("b", updated_at=1))
    choice, chat, _store = _choice(chats=chats, **{LAST_CHAT_KEY: "b"})
    choice.open_last_chat()
    assert chat.calls == [("open", "b")]


def test_a_last_chat_since_deleted_opens_the_first():
    chats = Chats(Conversation("a", updated_at=2), Conversation("b", updated_at=1))
    choice, chat, _store = _choice(chats=chats, **{LAST_CHAT_KEY: "deleted"})
    choice.open_last_chat()
    assert chat.calls == [("open_first", "")]
    assert chat.session is not None and chat.session.conversation.id == "a"


def test_no_last_chat_remembered_opens_the_first():
    for remembered in ({}, {LAST_CHAT_KEY: ""}):
        choice, chat, _store = _choice(chats=Chats(Conversation("a")), **remembered)
        choice.open_last_chat()
        assert chat.calls == [("open_first", "")]


def test_no_chats_at_all_start_a_new_one():
    choice, chat, _store = _choice(**{LAST_CHAT_KEY: "deleted"})
    choice.open_last_chat()
    assert chat.calls == [("new_chat", "")]


def test_the_chat_on_screen_is_remembered_and_none_as_empty():
    choice, _chat, store = _choice()
    choice.remember_chat(ChatSession(Conversation("b")))
    assert store.values[LAST_CHAT_KEY] == "b"
    choice.remember_chat(None)
    assert store.values[LAST_CHAT_KEY] == ""


def test_a_remembered_chat_opens_in_the_next_run():
    chats = Chats(Conversation("a", updated_at=2), Conversation("b", updated_at=1))
    first, _chat, store = _choice(chats=chats)
    first.remember_chat(ChatSession(Conversation("b")))
    chat = ChatService(chats)
    ChatChoice(chat, chats, store).open_last_chat()
    assert chat.calls == [("open", "b")]
