"""The shared notice banner (``design.widgets.Banner``): its dismiss button and its row of
actions once took the names ``close`` and ``actions``, so ``banner.close()`` raised instead of
closing and ``banner.actions()`` was not QWidget's list of actions."""

from __future__ import annotations

from PySide6.QtCore import Qt

from localllm.app.gui.design.widgets import Banner


def test_a_banner_closes_like_any_widget(qtbot):
    banner = Banner()
    qtbot.addWidget(banner)
    banner.show_text("The daemon stopped.")
    assert banner.isVisible()
    assert banner.close()
    assert not banner.isVisible()
    assert banner.actions() == []


def test_the_dismiss_button_dismisses_until_there_is_something_else_to_say(qtbot):
    banner = Banner()
    qtbot.addWidget(banner)
    banner.add_action("Retry", lambda: None)
    banner.finish_actions()
    banner.show_text("The daemon stopped.")
    with qtbot.waitSignal(banner.dismissed):
        qtbot.mouseClick(banner.dismiss_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible()
    banner.show_text("The daemon stopped.")
    assert not banner.isVisible()  # the same notice stays away
    banner.show_text("The daemon is back.")
    assert banner.isVisible()
