"""The scenes ``make_screenshots`` sets up before each picture: what a user would do to get
there (type, click, pick), done through the app's own widgets and services.

Each scene takes the ``Shooter``, for its window, its scratch folder and its ``wait``/``pause``;
none takes a picture itself, so the tour in ``make_screenshots`` reads as the list of pictures.
"""

from __future__ import annotations

import os
from pathlib import Path

LONG_CHAT = (
    "What should I check before running a model at home?",
    "How much memory does a 7B model need?",
    "And what does quantization change?",
    "Which context length should I pick?",
    "Summarise all that in a sentence.",
    "One more tip?",
    "Thanks. Anything else?",
    "Last question: GPU or CPU?",
)


def add_model(shot, name: str, *, projector: bool = False, **shape) -> None:
    """A generated model put straight into the daemon's store (as ``localllm create`` would),
    then the library refreshed: no Downloads row, unlike an import through the window."""
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store
    from localllm.model_registry.tiny_gguf import write_tiny_model
    from tests.support.model_writers.projector import write_tiny_projector

    path = write_tiny_model(shot.folder / f"{name}.gguf", **shape)
    eyes = write_tiny_projector(shot.folder / f"mmproj-{name}.gguf") if projector else None
    import_gguf(Store(Path(os.environ["LOCALLLM_MODELS"])), name, path, projector=eyes)
    library = shot.window.services.library
    library.refresh()
    shot.wait(lambda: library.table.row_of(f"{name}:latest") is not None)


def other_apps(folder: Path) -> dict[str, str]:
    """Models other apps downloaded, for "Found on this computer", under a home of its own: a
    Hugging Face cache (one file the same as ``tiny-demo``, so it shows as already added),
    LM Studio's folder, an Ollama store, and a folder on another file system (``/dev/shm``,
    where there is one) that must be copied. Returns the daemon's environment naming them."""
    from localllm.model_registry.tiny_gguf import write_tiny_model
    from tests.support.other_apps import hf_cache_model, lmstudio_model, ollama_model

    home = folder / "home"
    hub = home / ".cache" / "huggingface" / "hub"
    llama = "Llama-3.2-1B-Instruct-Q4_K_M.gguf"
    hf_cache_model(hub, "bartowski/Llama-3.2-1B-Instruct-GGUF", llama, seed=21)
    hf_cache_model(hub, "someone/tiny-demo-GGUF", "tiny-demo.gguf", seed=7, n_embd=128, n_layer=4)
    lmstudio = home / ".lmstudio" / "models"
    lmstudio_model(
        lmstudio, "lmstudio-community", "gemma-3-4b-it-GGUF", "gemma-3-4b-it-Q4_K_M.gguf"
    )
    ollama_model(home / ".ollama" / "models", "qwen2.5", "0.5b", seed=22, template="{{ .Prompt }}")
    far = Path("/dev/shm") if Path("/dev/shm").is_dir() else folder
    mine = far / f"{folder.name}-my-models"
    mine.mkdir(exist_ok=True)
    write_tiny_model(mine / "Mistral-7B-Instruct-v0.3-Q5_K_M.gguf", seed=23, n_embd=128)
    return {
        "HOME": str(home),  # the daemon's only: make_screenshots gives the app its own back
        "HF_HUB_CACHE": str(hub),
        "OLLAMA_MODELS": str(home / ".ollama" / "models"),
        "LOCALLLM_IMPORT_DIRS": str(mine),
    }


def found_models(shot) -> None:
    """The Models page with the list of models found on this computer filled in."""
    window = shot.window
    window.show_page("Models")
    found = window.services.found
    found.refresh()
    shot.wait(lambda: len(found.models) == 5 and not found.scanning)
    page = window.models_page
    page.table.clearSelection()
    page.splitter.setSizes([150, 330, 220])


def model_plan(shot, model: str) -> None:
    """The Models page's Overview of ``model`` with room for its memory plan: the bars, the
    legend and the figures in words, as the daemon planned them."""
    page = shot.window.models_page
    page.table.selectRow(row_of(page.table, model))
    shot.wait(lambda: page.plan_view is not None and page.plan_view.plan is not None)
    page.tabs.setCurrentIndex(0)
    panels = page.splitter.count()  # the list, "Found on this computer", the details
    page.splitter.setSizes([150, *[0] * (panels - 2), 550])


def open_new_chat(shot, model: str) -> None:
    """A new chat with ``model``, picked in the header as a user picks it."""
    services, page = shot.window.services, shot.window.chat_page
    services.chat.new_chat(model)
    shot.wait(lambda: services.chat.session.conversation.model == model)
    row = services.library.table.row_of(model)
    page.model_picker.setCurrentIndex(row)
    page.model_picker.activated.emit(row)


def ask(shot, question: str) -> None:
    """Type a question, press Enter and wait for the whole reply."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    chat, page = shot.window.services.chat, shot.window.chat_page
    before = len(chat.session.messages)
    QTest.keyClicks(page.composer.editor, question)
    QTest.keyClick(page.composer.editor, Qt.Key.Key_Return)
    shot.wait(lambda: len(chat.session.messages) == before + 2 and not chat.session.streaming)
    shot.pause(0.3)


def first_chat(shot) -> None:
    """Gemma asked twice with the settings open, then Regenerate: the last reply shows
    < 2/2 > and its numbers; the pointer rests on it, so it is highlighted and its buttons
    show. (Gemma 3 270M is a base model: asked for code, it writes prose.)"""
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QCursor

    chat, page = shot.window.services.chat, shot.window.chat_page
    page.settings_button.setChecked(True)
    page.settings.system_prompt.setPlainText("You are a concise assistant.")
    page.settings.temperature.setValue(0.3)
    page.settings.advanced.seed.setValue(7)  # the same replies each time the pictures are made
    page.settings.max_tokens.setValue(160)
    page.settings.flush()
    ask(shot, "Write a haiku about running models at home.")
    ask(shot, "Now write a short Python function that counts the words in a string.")
    page.transcript.regenerate_requested.emit()  # the Regenerate button
    shot.wait(lambda: chat.session.streaming, timeout=120)
    shot.wait(
        lambda: not chat.session.streaming and chat.session.messages[-1].version == 1, timeout=300
    )
    shot.pause(0.5)
    transcript = page.transcript
    rects = transcript._message_rects()
    if rects:
        spot = QPoint(int(rects[-1].center().x()), int(rects[-1].bottom()) - 40)
        spot.setY(min(spot.y() - transcript.verticalScrollBar().value(), transcript.height() - 60))
        QCursor.setPos(transcript.viewport().mapToGlobal(spot))
        transcript.pick(chat.session.messages[-1].id)


def advanced_settings(shot) -> None:
    """The same chat with Advanced open, a few values set and kept as a preset."""
    settings = shot.window.chat_page.settings
    settings.advanced.toggle.setChecked(True)
    settings.advanced.top_k.setValue(40)
    settings.advanced.top_p.setValue(0.9)
    settings.advanced.seed.setValue(42)
    settings.flush()
    assert settings.save_as_preset("Repeatable")
    shot.wait(lambda: settings.preset.currentText() == "Repeatable")


def long_chat(shot) -> None:
    """A base model (no chat template: the notice shows) at a 1,024-token context, asked until
    the meter in the header is about three quarters full; the settings closed, for a wide
    transcript."""
    add_model(shot, "tiny-base", n_embd=128, n_layer=4, seed=11, chat_template=None)
    open_new_chat(shot, "tiny-base:latest")
    page = shot.window.chat_page
    shot.wait(lambda: page.settings.model_notice.text() != "")
    page.settings.advanced.toggle.setChecked(False)
    page.settings.context.setValue(1024)
    page.settings.max_tokens.setValue(80)
    page.settings.flush()
    page.settings_button.setChecked(False)
    for question in LONG_CHAT:
        ask(shot, question)
        if page.context_meter.bar.value() >= 700:  # of 1000
            break
    shot.wait(lambda: page.context_meter.bar.value() >= 700)


def chat_memory(shot) -> None:
    """A chat model at a 512-token context, asked until the model no longer sees the first
    questions: the transcript scrolled to the divider where its memory starts, and the offer
    of a larger context above the message box."""
    from localllm.app.gui.state.chat.memory import DIVIDER_TEXT

    open_new_chat(shot, "tiny-demo:latest")
    chat, page = shot.window.services.chat, shot.window.chat_page
    page.settings.system_prompt.setPlainText("You are a concise assistant.")
    page.settings.context.setValue(512)
    page.settings.max_tokens.setValue(40)
    page.settings.flush()
    page.settings_button.setChecked(False)
    for question in LONG_CHAT:
        ask(shot, question)
        if chat.session.conversation.memory.starts_at:
            break
    ask(shot, "And which model should I start with?")
    shot.wait(lambda: page.memory_notice.isVisible())
    transcript = page.transcript
    transcript.follower.hold()  # read from the divider, as a user scrolled there
    cursor = transcript.document().find(DIVIDER_TEXT)
    bar = transcript.verticalScrollBar()
    bar.setValue(bar.value() + transcript.cursorRect(cursor).top() - 140)


def picture_chat(shot) -> None:
    """A model that sees (the tiny model with a tiny projector), asked about a picture."""
    from PySide6.QtGui import QColor, QImage, QPainter

    add_model(shot, "tiny-eyes", seed=9, projector=True)
    open_new_chat(shot, "tiny-eyes:latest")
    page = shot.window.chat_page
    shot.wait(lambda: page.composer.attach.isVisible())
    page.settings.max_tokens.setValue(40)
    page.settings.flush()
    picture = QImage(480, 320, QImage.Format.Format_RGB32)
    picture.fill(QColor("#87ceeb"))  # a sky, a sun and a hill
    painter = QPainter(picture)
    painter.setBrush(QColor("#ffcc33"))
    painter.drawEllipse(330, 40, 90, 90)
    painter.setBrush(QColor("#4c9a2a"))
    painter.drawEllipse(-120, 200, 720, 300)
    painter.end()
    path = shot.folder / "hill.png"
    picture.save(str(path))
    page.composer.add_images([path])
    ask(shot, "What is in this picture?")


DOCUMENTS = {
    "turbine-manual.md": "# Turbine T-200 manual\n\nInspect each blade every 400 operating "
    "hours.\nReplace the pitch bearing grease every 2,000 hours.\nStop the rotor before any "
    "inspection; lock it with the rotor pin.",
    "site-visit-2024.txt": "Site visit, March 2024: tower 3 shows light erosion on blade B. "
    "Next visit planned for September.",
    "safety.html": "<h1>Safety</h1><p>Two people on every climb. Wind above 15 m/s: no climbing."
    "</p>",
}


def settings(shot) -> None:
    """The Settings page: the theme, the context chats ask for and what Gemma would take at it
    (the daemon's plan)."""
    window = shot.window
    window.show_page("Settings")
    cost = window.settings_page.cost
    shot.wait(lambda: "gemma3-270m" in cost.text() and "tokens x" in cost.text(), timeout=30)


def documents_chat(shot) -> None:
    """A folder of notes attached to a new chat, indexed, and a question to Gemma whose reply
    cites the manual."""
    from tests.documents.files import write_pdf

    open_new_chat(shot, "gemma3-270m:latest")
    page = shot.window.chat_page
    page.settings_button.setChecked(False)
    page.settings.max_tokens.setValue(80)
    page.settings.flush()
    folder = shot.folder / "Wind farm notes"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text)
    write_pdf(folder / "maintenance-log.pdf", ["Maintenance log", "Blade B resealed in May."])
    documents = shot.window.services.documents
    page.documents.attach([folder])
    chat_id = shot.window.services.chat.session.conversation.id
    shot.wait(lambda: page.documents.chat_id == chat_id and chat_id not in documents.busy)
    shot.wait(lambda: "passages" in page.documents.summary.text())
    ask(shot, "How often should each blade be inspected?")
    shot.wait(lambda: "Sources:" in page.transcript.toPlainText())


def discover_search(shot) -> None:
    """A search, a repository picked, one of its quantizations selected."""
    hub, discover = shot.window.services.hub, shot.window.discover_page
    shot.window.show_page("Discover")
    discover.query.setText("gguf")
    discover.search_now()
    shot.wait(lambda: hub.repos.rowCount() == 4)
    discover.repos.selectRow(row_of(discover.repos, "ggml-org/gemma-3-12b-it-GGUF"))
    shot.wait(lambda: hub.files.rowCount() == 4)
    discover.files.selectRow(1)


def downloads(shot) -> None:
    """Two catalog models pulled: one paused part way, one running."""
    downloads, page = shot.window.services.downloads, shot.window.downloads_page
    shot.window.show_page("Downloads")
    downloads.pull("llama3.2:3b")
    downloads.pull("qwen:7b")
    shot.wait(lambda: _fraction(downloads, "llama3.2:3b") > 0.3, timeout=90)
    downloads.pause("llama3.2:3b")
    shot.wait(lambda: _state(downloads, "llama3.2:3b") == "paused")
    shot.wait(lambda: _fraction(downloads, "qwen:7b") > 0.75, timeout=90)
    page.table.selectRow(row_of(page.table, "llama3.2:3b"))


def discover_offline(shot, local_hub) -> None:
    """Hugging Face out of reach (the local hub stopped): a search fails, the banner says so
    and the search filters the built-in list instead."""
    downloads = shot.window.services.downloads
    shot.wait(lambda: _state(downloads, "qwen:7b") == "done", timeout=90)
    downloads.cancel("llama3.2:3b")
    shot.wait(lambda: downloads.state.get("llama3.2:3b") is None, timeout=30)
    local_hub.stop()
    hub, discover = shot.window.services.hub, shot.window.discover_page
    shot.window.show_page("Discover")
    discover.query.setText("qwen")
    discover.search_now()
    shot.wait(lambda: hub.offline, timeout=60)
    discover.catalog.selectRow(row_of(discover.catalog, "qwen2.5:0.5b"))


def server(shot) -> None:
    window = shot.window
    window.show_page("Server")
    page = window.server_page
    shot.wait(lambda: window.services.server.running.rowCount() >= 2)  # the chats' models
    shot.wait(lambda: "/api/chat" in page.log.toPlainText())
    page.log.verticalScrollBar().setValue(page.log.verticalScrollBar().maximum())


def server_remotes(shot):
    """Two remotes added from the Server page: a second real daemon serving two models, and a
    box that does not answer. Returns the second daemon, for the tour to stop."""
    from localllm.model_registry.tiny_gguf import write_tiny_model
    from tests.support.daemon import Daemon, free_port, make_store

    models = {
        name: write_tiny_model(shot.folder / f"remote-{name}.gguf", seed=seed)
        for name, seed in (("qwen3-8b", 5), ("llama3.1-70b", 6))
    }
    isolated = {
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "LOCALLLM_CONFIG": str(shot.folder / "remote-config"),
    }
    store = make_store(shot.folder / "remote-store", models)
    remote = Daemon(store, shot.folder / "remote-logs", env=isolated)
    page = shot.window.server_page
    table = shot.window.services.server.remotes.table
    for name, url in (("gpu-box", remote.url), ("lab", f"http://127.0.0.1:{free_port()}")):
        dialog = page.remotes.open_add_dialog()
        dialog.name.setText(name)
        dialog.urls.setText(url)
        dialog.submit()
        shot.wait(lambda name=name: table.row_of(name) is not None, timeout=30)
    shot.wait(lambda: table.rowCount() == 2 and any(r.healthy and r.models for r in table.items()))
    page.log.verticalScrollBar().setValue(page.log.verticalScrollBar().maximum())
    return remote


def forget_remotes(shot, remote) -> None:
    gateway = shot.window.services.gateway
    for name in ("gpu-box", "lab"):
        gateway.remove_remote(name)
    remote.stop()


def server_lan(shot) -> None:
    """The local-network switch: the daemon restarts on every interface, with an API key."""
    page = shot.window.server_page
    page.lan.click()
    shot.wait(lambda: page.api_key.text() != "", timeout=90)
    shot.wait(lambda: shot.window.services.monitor.status.up, timeout=60)
    page.show_key.setChecked(True)
    page.server.fetch_log()
    shot.wait(lambda: page.message.text() == "", timeout=30)


WEATHER_SERVER = """
from typing import Literal
from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")
SKIES = {"Lisbon": "21 °C, sunny", "Oslo": "4 °C, light rain", "Tokyo": "16 °C, cloudy"}


@server.tool()
def forecast(city: Literal["Lisbon", "Oslo", "Tokyo"]) -> str:
    \"\"\"Today's weather in a city.\"\"\"
    return f"{city}: {SKIES[city]}"


server.run()
"""


def tools_chat(shot) -> None:
    """A model that can call tools, a stdio MCP server added in Settings (Tools), one call
    approved (its result shown, the model went on) and the next one waiting for approval."""
    import sys
    from dataclasses import replace

    from PySide6.QtCore import QUrl

    from localllm.app.tools.servers import ServerConfig
    from localllm.model_registry.tiny_gguf import CHATML_TEMPLATE

    template = "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}" + CHATML_TEMPLATE
    add_model(shot, "tiny-tools", n_embd=128, n_layer=4, seed=13, chat_template=template)
    script = shot.folder / "weather_server.py"
    script.write_text(WEATHER_SERVER, encoding="utf-8")
    tools = shot.window.services.tools
    server = ServerConfig("weather", command=sys.executable, args=(str(script),))
    tools.save(replace(tools.settings.with_servers([server]), require_call=True))
    shot.window.show_page("Chat")
    open_new_chat(shot, "tiny-tools:latest")
    page, chat = shot.window.chat_page, shot.window.services.chat
    page.settings.max_tokens.setValue(60)
    page.settings.flush()
    page.settings_button.setChecked(False)
    ask(shot, "What is the weather like in one of the cities you know?")
    shot.wait(lambda: chat.session.pending_calls, timeout=120)
    page.transcript.anchorClicked.emit(
        QUrl(f"action:tool:{chat.session.pending_calls[0].id}:approve")
    )
    shot.wait(lambda: len(chat.session.messages) == 3 and not chat.session.streaming, timeout=120)
    ask(shot, "And in another one?")
    shot.wait(lambda: chat.session.pending_calls, timeout=120)


def dark(shot, first_chat_id: str) -> None:
    """The dark theme, picked on the Settings page as a user picks it, on the first chat; the
    offline notice (the stand-in hub is down by now) dismissed, as a user who read it does."""
    app, window = shot.app, shot.window
    if window.offline.isVisible():
        window.offline.dismiss()
    page = window.settings_page
    page.theme.setCurrentIndex(page.theme.findData("dark"))
    page.theme.activated.emit(page.theme.currentIndex())
    shot.wait(lambda: app.palette().window().color().lightness() < 128)
    window.show_page("Chat")
    chat = window.services.chat
    chat.open(first_chat_id)
    shot.wait(lambda: chat.session.conversation.id == first_chat_id and chat.session.messages)
    window.chat_page.settings_button.setChecked(False)


def row_of(view, text: str) -> int:
    model = view.model()
    return next(r for r in range(model.rowCount()) if model.index(r, 0).data() == text)


def _fraction(downloads, name: str) -> float:
    item = downloads.state.get(name)
    return item.fraction if item is not None else 0.0


def _state(downloads, name: str) -> str:
    item = downloads.state.get(name)
    return item.state if item is not None else ""
