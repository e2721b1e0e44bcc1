"""Editing a sent message keeps the old branch (as LM Studio does): the new words become a new
version of that question, as Regenerate makes a new version of a reply; "< 1/2 >" flips between
them, each with everything that followed it, and the chat history keeps every branch. First the
conversation state and the store on their own, then the real app against a real daemon.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt, QUrl

from localllm.app.gui.services.bundle import HISTORY_FILE
from localllm.app.gui.state.chat.records import Conversation
from localllm.app.gui.state.chat.session import ChatSession, Persist
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.chat.transcript_actions import EditMessage, ShowVersion, href
from localllm.app.gui.state.records import ChatDelta, ChatDone
from tests.support.gui_e2e import (
    GuiDaemon,
    open_app,
    pick_model,
    send_message,
    tiny_models,
    wait_idle,
)


class _Written:
    """A session whose every change is written to a real store, as the app writes them."""

    def __init__(self, store: ConversationStore):
        self.store = store
        self.session = ChatSession(Conversation("c", model="m"))
        store.save_conversation(self.session.conversation)

    def write(self, persist: Persist | None) -> None:
        assert persist is not None and persist.conversation is not None
        self.store.save_conversation(persist.conversation)
        if persist.truncate_from is not None:
            self.store.truncate("c", persist.truncate_from)
        if persist.removed is not None:
            self.store.remove_message("c", persist.removed)
        for position, message in persist.messages:
            self.store.save_message("c", position, message)

    def answer(self, text: str) -> None:
        reply_id = self.session.reply_id
        assert self.session.add(reply_id, ChatDelta(text)) is None
        self.write(self.session.add(reply_id, ChatDone(eval_count=1, eval_duration=10**6)))

    def ask(self, text: str, answer: str) -> None:
        self.write(self.session.send(text))
        self.answer(answer)

    def contents(self) -> list[str]:
        return [m.content for m in self.session.messages]

    def reloaded(self) -> ChatSession:
        return ChatSession(self.session.conversation, self.store.messages("c"))


@pytest.fixture
def chat(tmp_path):
    store = ConversationStore(tmp_path / "history.db")
    yield _Written(store)
    store.close()


def test_an_edit_is_a_new_version_and_the_old_one_keeps_what_followed(chat):
    chat.ask("q1", "a1")
    chat.ask("q2", "a2")
    q1 = chat.session.messages[0]
    chat.write(chat.session.edit(q1.id, "q1, better"))
    chat.answer("b1")
    assert chat.contents() == ["q1, better", "b1"]
    edited = chat.session.messages[0]
    assert (edited.version, [v.content for v in edited.versions]) == (1, ["q1", "q1, better"])
    assert [t.content for t in chat.session.turns()] == ["q1, better", "b1"]  # the model's view

    chat.write(chat.session.show_version(edited.id, 0))
    assert chat.contents() == ["q1", "a1", "q2", "a2"]
    assert chat.session.messages[0].id == q1.id  # the same messages, not copies
    assert [t.content for t in chat.session.turns()] == ["q1", "a1", "q2", "a2"]
    assert chat.reloaded().messages == chat.session.messages  # the store has both branches
    chat.write(chat.reloaded().show_version(q1.id, 1))
    assert [m.content for m in chat.reloaded().messages] == ["q1, better", "b1"]


def test_branches_nest_and_keep_their_regenerated_replies(chat):
    chat.ask("q1", "a1")
    chat.write(chat.session.regenerate())
    chat.answer("a1 again")  # a reply with two versions...
    chat.ask("q2", "a2")
    chat.write(chat.session.edit(chat.session.messages[2].id, "q2, edited"))  # ...then a branch
    chat.answer("b2")
    first = chat.session.messages[0]
    chat.write(chat.session.edit(first.id, "q1, edited"))  # a branch holding a branch
    chat.answer("c1")
    reloaded = chat.reloaded()
    assert [m.content for m in reloaded.messages] == ["q1, edited", "c1"]
    chat.write(reloaded.show_version(reloaded.messages[0].id, 0))
    back = chat.reloaded().messages
    assert [m.content for m in back] == ["q1", "a1 again", "q2, edited", "b2"]
    assert [v.content for v in back[1].versions] == ["a1", "a1 again"]
    assert [v.content for v in back[2].versions] == ["q2", "q2, edited"]
    inner = ChatSession(chat.session.conversation, back).show_version(back[2].id, 0)
    assert [m.content for _, m in inner.messages] == ["q2", "a2"]
    assert chat.store.search("a2") == {"c"}  # the words of a branch not shown are found


def test_deleting_an_edited_question_drops_that_version_with_what_followed(chat):
    chat.ask("q1", "a1")
    chat.write(chat.session.edit(chat.session.messages[0].id, "q1, better"))
    chat.answer("b1")
    chat.write(chat.session.delete(chat.session.messages[0].id))
    assert chat.contents() == ["q1", "a1"] and not chat.session.messages[0].others
    assert chat.reloaded().messages == chat.session.messages


# the real app


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    running = GuiDaemon(tmp_path_factory.mktemp("gui-branches"), tiny_models(tiny_model_path))
    yield running
    running.stop()


def _open_chat(services) -> str:
    session = services.chat.session
    return session.conversation.id if session is not None else ""


def _shown(services) -> list[tuple[str, str]]:
    return [(m.id, m.content) for m in services.chat.session.messages]


@pytest.mark.slow
def test_edit_keeps_the_old_branch_to_switch_back_to_and_after_a_restart(qtbot, daemon, tmp_path):
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    try:
        pick_model(qtbot, window)
        send_message(qtbot, window, "First question")
        send_message(qtbot, window, "Second question")
        old = _shown(services)
        page, transcript = window.chat_page, window.chat_page.transcript
        transcript.anchorClicked.emit(QUrl(href(EditMessage(old[0][0]))))
        assert page.composer.editing and page.composer.banner.isVisibleTo(window)
        qtbot.keyClick(page.composer.editor, Qt.Key.Key_Escape)  # Esc leaves the edit
        assert not page.composer.editing and not page.composer.editor.toPlainText()
        assert _shown(services) == old
        transcript.anchorClicked.emit(QUrl(href(EditMessage(old[0][0]))))
        page.composer.editor.setPlainText("Better question")
        with qtbot.waitSignal(services.chat.reply_finished, timeout=30_000):
            qtbot.keyClick(page.composer.editor, Qt.Key.Key_Return)
        new = _shown(services)
        assert [text for _, text in new[:1]] == ["Better question"] and len(new) == 2
        assert "Second question" not in transcript.toPlainText()
        assert "\u2039 2/2 \u203a" in transcript.toPlainText()  # the question's switcher

        question = new[0][0]
        transcript.pick(question)  # its buttons, as the pointer or Alt+Up shows them
        assert transcript.message_actions.version.text() == "2/2"
        transcript.message_actions.back.click()  # the previous version
        assert _shown(services) == old  # the old words, their answer and the later turns
        assert "Second question" in transcript.toPlainText()
        assert "\u2039 1/2 \u203a" in transcript.toPlainText()
        chat_id = services.chat.session.conversation.id
        wait_idle(qtbot, services)
    finally:
        window.close()
        services.shutdown()

    kept = ConversationStore(tmp_path / HISTORY_FILE)
    try:  # on disk: the old branch shown, the new one kept as the question's other version
        on_disk = kept.messages(chat_id)
    finally:
        kept.close()
    assert [(m.id, m.content) for m in on_disk] == old
    assert [(m.id, m.content) for m in on_disk[0].others[0].branch] == new[1:]

    again, second = open_app(qtbot, daemon.gateway(), tmp_path)
    try:
        again.chat.open(chat_id)
        qtbot.waitUntil(lambda: _open_chat(again) == chat_id, timeout=10_000)
        assert _shown(again) == old
        second.chat_page.transcript.anchorClicked.emit(QUrl(href(ShowVersion(old[0][0], 1))))
        assert _shown(again) == new  # the edited branch, back after the restart
    finally:
        again.shutdown()
