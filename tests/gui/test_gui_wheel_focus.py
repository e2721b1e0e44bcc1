"""The mouse wheel over the chat settings scrolls them: a number field or a list under the
pointer takes the wheel only once it has the focus (clicked or tabbed into), as in careful Qt
apps; before, scrolling the panel changed whichever field passed under the pointer.

The window is the one ``localllm app`` opens (``open_window``, which installs the guard), over a
stand-in daemon; the wheel is a real one, through the window system (``QTest.wheelEvent``), so
Qt hands an ignored turn on to the scroll area as it does for a mouse."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from localllm.app.gui.main import AppConfig, open_window
from localllm.app.gui.state.gateway import Gateway
from tests.support.cli import FakeClient
from tests.support.gui_e2e import prefs_in

DOWN, UP = QPoint(0, -120), QPoint(0, 120)  # a notch: towards the user (the page moves up)


def _turn(field: QWidget, notch: QPoint = DOWN) -> None:
    """One notch of the wheel with the pointer on ``field``."""
    window = field.window()
    QTest.wheelEvent(window.windowHandle(), field.mapTo(window, field.rect().center()), notch)


def test_the_wheel_scrolls_the_chat_settings_past_fields_until_one_is_clicked(qtbot, tmp_path):
    app = QApplication.instance()
    config = AppConfig(history_dir=tmp_path, autostart=False)
    window, _tray = open_window(app, Gateway(FakeClient()), config, prefs_in(tmp_path))
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        services = window.services
        qtbot.waitUntil(lambda: services.library.loaded and services.chat.session is not None)
        window.resize(1366, 700)
        window.show_page("Chat")
        page = window.chat_page
        page.settings_button.setChecked(True)
        page.settings.advanced.toggle.click()  # the whole panel: taller than the window
        area, panel = page.settings_area, page.settings
        QTest.qWaitForWindowExposed(window)
        qtbot.waitUntil(lambda: area.isVisible() and area.verticalScrollBar().maximum() > 0)
        qtbot.waitUntil(lambda: window.rect().contains(area.mapTo(window, area.rect().center())))
        bar = area.verticalScrollBar()

        for field in (panel.temperature, panel.context, panel.overflow):
            assert not field.hasFocus()
            bar.setValue(0)
            before = field.currentIndex() if field is panel.overflow else field.value()
            _turn(field)
            qtbot.waitUntil(lambda: bar.value() > 0)  # the turn went on to the scroll area
            after = field.currentIndex() if field is panel.overflow else field.value()
            assert after == before, f"{field.accessibleName() or field}: the wheel changed it"
            assert not field.hasFocus()  # the wheel gives no focus either

        bar.setValue(0)
        box = panel.temperature
        qtbot.mouseClick(box.lineEdit(), Qt.MouseButton.LeftButton)  # the user picks it
        qtbot.waitUntil(box.hasFocus)
        before = box.value()  # "model default", its lowest: a notch up raises it
        _turn(box, UP)
        qtbot.waitUntil(lambda: box.value() > before)  # now the wheel is the field's
        assert bar.value() == 0
    finally:
        services.shutdown()
