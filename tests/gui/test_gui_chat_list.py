"""The chat list: chats grouped by day under section titles, each chat's menu (rename, export,
delete), and "Export as Markdown" writing the chat as it reads on screen."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QMenu

from localllm.app.gui.item_models.conversations import CONVERSATION_ROLE, ConversationListModel
from localllm.app.gui.services.chat import ChatController
from localllm.app.gui.state.chat.day_groups import day_group
from localllm.app.gui.state.chat.export import markdown_file_name
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.sidebar import ChatSidebar
from localllm.app.gui.workers import Workers
from tests.support.cli import FakeClient

NOW = datetime(2026, 11, 28, 15, 0).timestamp()


def _ago(**delta) -> float:
    return (datetime.fromtimestamp(NOW) - timedelta(**delta)).timestamp()


def test_chats_fall_into_the_day_groups_people_expect():
    assert day_group(_ago(hours=2), NOW) == "Today"
    assert day_group(_ago(days=1), NOW) == "Yesterday"
    assert day_group(_ago(days=5), NOW) == "Previous 7 days"
    assert day_group(_ago(days=20), NOW) == "Previous 30 days"
    assert day_group(_ago(days=90), NOW) == "August 2026"


def test_the_more_button_asks_for_its_chats_menu_under_itself(qtbot):
    """A click on a row's "more" button (a mouse release the delegate reads as one) asks for
    that chat's menu, placed under the button in screen coordinates."""
    chats = ConversationListModel()
    for name in ("a", "b"):
        chats.add(Conversation(name, f"Chat {name}", updated_at=_ago(hours=1)))
    sidebar = ChatSidebar(chats)
    sidebar.delegate._clock = lambda: NOW
    qtbot.addWidget(sidebar)
    sidebar.resize(240, 400)
    sidebar.show()
    qtbot.waitExposed(sidebar)
    index = chats.index(1, 0)  # the second of a group: no section title above it
    row = sidebar.list.visualRect(index)
    viewport = sidebar.list.viewport()
    with qtbot.waitSignal(sidebar.delegate.menu_requested) as asked:
        qtbot.mouseClick(
            viewport, Qt.MouseButton.LeftButton, pos=QPoint(row.right() - 16, row.center().y())
        )
    chat, where = asked.args
    assert chat.row() == 1
    assert where == viewport.mapToGlobal(QPoint(row.right() - 28, row.center().y() + 11))


def test_the_list_titles_each_group_once_above_its_first_chat(qtbot):
    chats = ConversationListModel()
    ages = {"a": {"hours": 1}, "b": {"hours": 3}, "c": {"days": 1}, "d": {"days": 40}}
    for name, age in ages.items():
        chats.add(Conversation(name, f"Chat {name}", updated_at=_ago(**age)))
    sidebar = ChatSidebar(chats)
    sidebar.delegate._clock = lambda: NOW
    qtbot.addWidget(sidebar)
    sidebar.resize(240, 400)
    sidebar.show()
    qtbot.waitExposed(sidebar)
    sections = [sidebar.delegate.section(chats.index(r, 0)) for r in range(4)]
    assert sections == ["Today", "", "Yesterday", "October 2026"]
    heights = [sidebar.list.visualRect(chats.index(r, 0)).height() for r in range(4)]
    assert heights[0] > heights[1] and heights[2] == heights[0]  # room for the title
    menu = sidebar.menu(chats.index(1, 0))
    assert [a.text() for a in menu.actions() if a.text()] == [
        "Rename",
        "Export as Markdown…",
        "Delete…",
    ]


def test_export_writes_the_chat_as_markdown(qtbot, tmp_path):
    db = tmp_path / "chats.db"
    chat = Conversation(
        "c1", "Trip: plans/ideas", "tiny:latest", "Be brief.", created_at=NOW, updated_at=NOW
    )
    store = ConversationStore(db)
    store.save_conversation(chat)
    store.save_message("c1", 0, Message("m1", "user", "Where should we go?"))
    reply = Message("m2", "assistant", "Try **Lisbon**.\n\n```\nbook()\n```", thinking="Hmm")
    store.save_message("c1", 1, reply)
    store.close()
    disk = Workers(max_threads=1)
    controller = ChatController(Gateway(FakeClient()), Workers(), disk, db)
    with qtbot.waitSignal(controller.loaded):
        controller.load()
    target = tmp_path / markdown_file_name(chat.title)
    assert target.name == "Trip- plans-ideas.md"
    with qtbot.waitSignal(controller.exported, timeout=10_000) as done:
        controller.export("c1", target)
    assert done.args == [str(target)]
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# Trip: plans/ideas\n\nModel: tiny:latest · Last used: 2026-11-28")
    assert "> Be brief." in text
    assert "## You\n\nWhere should we go?" in text
    assert "## tiny:latest\n\n> Hmm\n\nTry **Lisbon**.\n\n```\nbook()\n```" in text
    disk.shutdown(wait_ms=5000, drop_queued=False)


def test_the_chat_menu_opens_from_the_keyboard(qtbot):
    chats = ConversationListModel()
    chats.add(Conversation("a", "Chat a", updated_at=time.time()))
    sidebar = ChatSidebar(chats)
    qtbot.addWidget(sidebar)
    sidebar.show()
    qtbot.waitExposed(sidebar)
    with qtbot.waitActive(sidebar):
        sidebar.activateWindow()
    sidebar.list.setFocus()
    sidebar.list.setCurrentIndex(chats.index(0, 0))
    assert sidebar.list.currentIndex().data(CONVERSATION_ROLE).id == "a"
    qtbot.keyClick(sidebar.list, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)

    def menu() -> QMenu | None:
        shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMenu)]
        return next((w for w in shown if w.isVisible()), None)

    qtbot.waitUntil(lambda: menu() is not None)
    assert "Export as Markdown…" in [a.text() for a in menu().actions()]
    menu().close()
