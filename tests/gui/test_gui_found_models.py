"""The "Found on this computer" list without a daemon: what each row says adding costs, and a
model on another disk copied only after the person agreed to its size."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from localllm.app.gui.services.found_models import FoundModels
from localllm.app.gui.state.found_models import found_model, import_step
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views import found_panel
from localllm.app.gui.views.found_panel import FoundPanel
from localllm.app.gui.workers import Workers
from localllm.daemon.api.local_models import ImportProgress, LocalModelOut
from tests.support.cli import FakeClient


def _out(name: str, **kw) -> LocalModelOut:
    fields = {
        "source": "lmstudio",
        "name": name,
        "path": f"/models/{name}.gguf",
        "size": 4_700_000_000,
        "architecture": "llama",
        "quantization": "Q4_K_M",
        "parameter_size": "8.0B",
    }
    return LocalModelOut(**{**fields, **kw})


def test_rows_say_what_adding_costs():
    linked = found_model(_out("near", linkable=True))
    copied = found_model(_out("far"))
    added = found_model(_out("old", in_store=True, linkable=True))
    assert (linked.how_text, linked.button_text) == ("link: no copy", "Add")
    assert copied.how_text == "copy 4.7 GB" and copied.button_text == "Copy…"
    assert (added.how_text, added.button_text) == ("already added", "Added")
    assert copied.source_text == "LM Studio"
    done = import_step(ImportProgress(status="success", model="far", copied_bytes=2_000_000))
    assert done.text == "Added far (2.0 MB copied)" and not done.linked
    assert import_step(ImportProgress(status="copying x", total=4, completed=1)).fraction == 0.25


def test_the_panel_keeps_qwidget_scroll(qtbot):
    """Its scroll area once sat in ``self.scroll``, hiding ``QWidget.scroll(dx, dy)``."""
    workers = Workers()
    panel = FoundPanel(FoundModels(Gateway(FakeClient(found=[])), workers))
    qtbot.addWidget(panel)
    panel.scroll(0, 0)  # QWidget's, which raised TypeError (a QScrollArea is not callable)
    assert isinstance(panel.scroll_area.widget(), QWidget)
    workers.shutdown(wait_ms=2000)


def test_a_copy_is_made_only_after_the_size_was_agreed(qtbot, monkeypatch):
    client = FakeClient(found=[_out("far"), _out("near", linkable=True)])
    workers = Workers()
    found = FoundModels(Gateway(client), workers)
    panel = FoundPanel(found)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitUntil(lambda: set(panel.buttons) == {"far", "near"}, timeout=10_000)
    asked: list[str] = []

    def refuse(_parent, _title, question):
        asked.append(question)
        return False

    monkeypatch.setattr(found_panel, "confirm", refuse)
    qtbot.mouseClick(panel.buttons["far"], Qt.MouseButton.LeftButton)
    assert "4.7 GB" in asked[0] and not [c for c in client.calls if c[0] == "import_file"]
    monkeypatch.setattr(found_panel, "confirm", lambda *_: True)
    with qtbot.waitSignal(found.added, timeout=10_000):
        qtbot.mouseClick(panel.buttons["far"], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(found.added, timeout=10_000):
        qtbot.mouseClick(panel.buttons["near"], Qt.MouseButton.LeftButton)
    imports = [c for c in client.calls if c[0] == "import_file"]
    assert imports == [
        ("import_file", "far.gguf", "far", "copy"),
        ("import_file", "near.gguf", "near", "auto"),
    ]
    workers.shutdown(wait_ms=2000)


def test_every_add_button_has_its_room_at_1024_px(qtbot, tmp_path):
    """The list once was a table whose last column cut its buttons off at 1,280 px; its rows
    now give the button its width and cut a long name instead."""
    from PySide6.QtCore import QPoint

    from localllm.app.gui.services.bundle import build_services
    from localllm.app.gui.views.main_window import MainWindow
    from tests.support.gui_e2e import prefs_in

    long = "mistral-7b-instruct-v0.3-with-a-very-long-name-somebody-gave-it:q5_k_m"
    found = [_out("far"), _out("near", linkable=True), _out("old", in_store=True), _out(long)]
    services = build_services(Gateway(FakeClient(found=found)), tmp_path, autostart=False)
    window = MainWindow(services, prefs_in(tmp_path))
    qtbot.addWidget(window)
    window.resize(1024, 700)
    window.show()
    window.show_page("Models")
    panel = window.found_panel
    qtbot.waitUntil(lambda: len(panel.buttons) == 4, timeout=10_000)
    qtbot.waitUntil(lambda: panel.buttons[long].isVisible())
    viewport = panel.scroll_area.viewport()
    for name, button in panel.buttons.items():
        left = button.mapTo(viewport, QPoint(0, 0)).x()
        assert left >= 0 and left + button.width() <= viewport.width(), name
        assert button.width() >= button.sizeHint().width(), name  # not squeezed either
    assert [panel.buttons[n].text() for n in ("far", "near", "old")] == ["Copy…", "Add", "Added"]
    assert window.width() == 1024  # and no long name widened the window
    services.shutdown()
