"""Talking to models in the real app, against a real daemon with the real Whisper base (the
real-model tier, imported into the test store) and speech that espeak-ng wrote: a take recorded
from a WAV file (the recording code is the app's own; only the device differs) lands in the
message at the cursor, Esc stops it and the level meter moved; a WAV file dropped on the
conversation becomes its transcript; without a transcription model the microphone says why and
Settings offers one; the Voice choices outlive the app; an answer is read aloud by the real
Piper voice (kept in a WAV file, the speakers' stand-in) and Whisper hears it back."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from localllm.app.gui.services.audio_outputs import WavFileOutput
from localllm.app.gui.services.audio_sources import Microphone, WavFile
from localllm.app.gui.services.bundle import HISTORY_FILE
from localllm.app.gui.state.chat.records import Conversation, Message, new_id
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.voice import NO_MODEL
from localllm.model_registry.store import Store
from localllm.model_registry.transcription import import_whisper_folder
from localllm.model_registry.voice import import_voice
from tests.gui.test_gui_e2e_documents import _drop
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models
from tests.support.real_voice import joe_voice_path
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import speak, word_error_rate

pytestmark = pytest.mark.slow

SENTENCE = "Please open the window and let some fresh air into the room."
WHISPER = "whisper:base"
VOICE = "voice:joe"
TRANSCRIBED = 180_000  # ms: the first take loads the model, on a busy two-core machine too


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    running = GuiDaemon(tmp_path_factory.mktemp("gui-voice"), tiny_models(tiny_model_path))
    import_whisper_folder(Store(running.root / "store"), WHISPER, whisper_base_path())
    import_voice(Store(running.root / "store"), VOICE, joe_voice_path())
    yield running
    running.stop()


@pytest.fixture(scope="module")
def spoken(tmp_path_factory) -> Path:
    return speak(SENTENCE, tmp_path_factory.mktemp("speech") / "spoken.wav")


@pytest.fixture
def app(qtbot, daemon, tmp_path):
    """The app over the module's daemon, once it knows Whisper is there."""
    opened: list = []

    def open_it(folder: Path = tmp_path):
        services, window = open_app(qtbot, daemon.gateway(), folder)
        opened.append(services)
        qtbot.waitUntil(lambda: services.voice.transcriber != "", timeout=20_000)
        qtbot.waitUntil(lambda: window.chat_page.composer.isVisible(), timeout=10_000)
        return services, window

    yield open_it
    for services in opened:
        services.shutdown()


def test_talking_puts_the_words_in_the_message_at_the_cursor(qtbot, app, spoken):
    _services, window = app()
    page = window.chat_page
    voice, editor = page.voice, page.composer.editor
    assert voice is not None and voice.button.isEnabled()
    assert not voice.isVisible() and not voice.meter.isVisible()  # idle: no row, no meter
    problem = Microphone().problem()  # this computer's own: Qt Multimedia and a device
    assert (problem or WHISPER) in voice.button.toolTip()
    if problem:  # a click says why, and nothing starts
        voice.button.click()
        assert voice.phase == "idle" and voice.status.text() == problem
    voice.use_input(WavFile(spoken, speed=8))
    assert WHISPER in voice.button.toolTip()
    editor.setPlainText("Note:")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    levels: list[int] = []
    voice.meter.valueChanged.connect(levels.append)
    voice.button.click()
    assert voice.phase == "recording" and voice.button.isChecked()
    assert voice.meter.isVisible() and "Esc" in voice.button.toolTip()
    qtbot.waitUntil(lambda: voice.source is not None and voice.source.done, timeout=30_000)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)  # Esc stops the take and sends it
    assert voice.phase == "transcribing" and not voice.button.isEnabled()
    qtbot.waitUntil(lambda: voice.phase == "idle", timeout=TRANSCRIBED)
    text = editor.toPlainText()
    assert text.startswith("Note: ") and not voice.status.text(), (text, voice.status.text())
    assert word_error_rate(SENTENCE, text.removeprefix("Note: ")) < 0.2, text
    assert max(levels) > 40, levels  # speech, not silence, went through the meter
    assert not voice.isVisible() and voice.button.isEnabled()
    assert editor.textCursor().position() == len(text)  # typing goes on after the words


def test_a_dropped_wav_becomes_its_transcript(qtbot, app, spoken):
    services, window = app()
    page = window.chat_page
    voice, editor = page.voice, page.composer.editor
    qtbot.waitUntil(lambda: services.chat.session is not None, timeout=10_000)
    _drop(page.transcript.viewport(), [spoken])
    assert voice.phase == "transcribing" and "spoken.wav" in voice.status.text()
    qtbot.waitUntil(lambda: voice.phase == "idle", timeout=TRANSCRIBED)
    heading, _, words = editor.toPlainText().partition("\n")
    assert heading == "Transcript of spoken.wav:", editor.toPlainText()
    assert word_error_rate(SENTENCE, words) < 0.2, words
    chat_id = services.chat.session.conversation.id
    assert services.documents.attached(chat_id) == ()  # audio is heard, not indexed


def test_without_a_transcription_model_the_microphone_says_why(
    qtbot, tiny_model_path, spoken, tmp_path
):
    bare = GuiDaemon(tmp_path / "daemon", tiny_models(tiny_model_path))
    services = None
    try:
        services, window = open_app(qtbot, bare.gateway(), tmp_path / "app")
        page = window.chat_page
        voice = page.voice
        qtbot.waitUntil(lambda: page.composer.isVisible(), timeout=20_000)
        qtbot.waitUntil(lambda: services.library.table.rowCount() == 1, timeout=10_000)
        assert not voice.button.isEnabled() and voice.button.toolTip() == NO_MODEL
        _drop(page.transcript.viewport(), [spoken])
        assert voice.status.text() == NO_MODEL and voice.phase == "idle"
        window.show_page("Settings")
        section = window.voice_settings
        assert section.pull.isVisible() and section.import_folder.isVisible()
        assert section.pull.text() == "Pull whisper:base"
        assert not section.transcriber.isEnabled()
    finally:
        if services is not None:
            services.shutdown()
        bare.stop()


def test_the_voice_choices_outlive_the_app(qtbot, app, daemon):
    services, window = app()
    services.library.copy(WHISPER, "whisper:second")  # a second model to choose from
    try:
        qtbot.waitUntil(lambda: len(services.voice.transcribers) == 2, timeout=20_000)
        window.show_page("Settings")
        section = window.voice_settings
        assert not section.pull.isVisible()
        section.transcriber.setCurrentIndex(section.transcriber.findData("whisper:second"))
        section.transcriber.activated.emit(section.transcriber.currentIndex())
        section.language.setCurrentIndex(section.language.findData("de"))
        section.language.activated.emit(section.language.currentIndex())
        section.language.lineEdit().setText("sv")  # a code not on the list, typed
        section.language.lineEdit().editingFinished.emit()
        assert services.voice.preferences.language == "sv"
        window.close()  # as the user closes it: the window keeps its state
        services.shutdown()
        again, reopened = app()
        qtbot.waitUntil(lambda: len(again.voice.transcribers) == 2, timeout=20_000)
        assert again.voice.preferences.transcriber == "whisper:second"
        assert again.voice.transcriber == "whisper:second"
        assert reopened.voice_settings.transcriber.currentData() == "whisper:second"
        assert reopened.voice_settings.language.currentData() == "sv"
        assert WHISPER not in reopened.chat_page.voice.button.toolTip()
    finally:
        daemon.gateway().delete("whisper:second")


def test_an_answer_is_read_aloud_and_heard_back(qtbot, app, daemon, tmp_path):
    history = ConversationStore(tmp_path / HISTORY_FILE)  # a chat whose answer is known
    chat = Conversation(new_id(), title="Read to me", model=MODEL)
    answer = Message(new_id(), "assistant", f"**{SENTENCE}**")
    history.save_conversation(chat)
    history.save_message(chat.id, 0, Message(new_id(), "user", "What should I do?"))
    history.save_message(chat.id, 1, answer)
    history.close()
    services, window = app()
    page = window.chat_page
    qtbot.waitUntil(lambda: services.voice.voice == VOICE, timeout=20_000)
    services.chat.open(chat.id)
    qtbot.waitUntil(lambda: services.chat.session.conversation.id == chat.id, timeout=10_000)
    qtbot.waitUntil(lambda: len(services.chat.session.messages) == 2, timeout=10_000)
    speakers = WavFileOutput(tmp_path / "heard.wav")
    page.reader.use_output(speakers)
    page.transcript.pick(answer.id)
    actions = page.transcript.message_actions
    assert actions.read.isVisible() and actions.read.accessibleName() == "Read aloud"
    qtbot.mouseClick(actions.read, Qt.MouseButton.LeftButton)
    assert page.reader.reading and VOICE in page.status.text()
    qtbot.waitUntil(lambda: speakers.played == 1, timeout=TRANSCRIBED)
    assert not page.reader.reading and page.status.text() == ""
    with wave.open(str(speakers.path), "rb") as sound:  # its header says its real length
        assert 1.5 < sound.getnframes() / sound.getframerate() < 15
    heard = "".join(daemon.gateway().transcribe_text(speakers.path, WHISPER))
    assert word_error_rate(SENTENCE, heard) < 0.2, heard  # the words, not the asterisks
