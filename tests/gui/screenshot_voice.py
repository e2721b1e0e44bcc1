"""The voice scenes ``make_screenshots`` sets up (``--only voice`` makes just these): the
composer's microphone recording, with its level meter, the transcript it leaves in the
message, and the answer to it being read aloud, in the light and the dark theme.

The speech is real: a question spoken by espeak-ng, played into the app's own recording
pipeline from a WAV file at the pace it was spoken (the microphone's stand-in, as in the tests),
and transcribed by the real Whisper base (the real-model tier), imported as a user imports a
Whisper folder; the answer is spoken by the real Piper voice into a WAV file, so nothing plays.
Like ``screenshot_scenes``, no scene takes a picture itself.
"""

from __future__ import annotations

import os
from pathlib import Path

from localllm.app.gui.services.audio_outputs import WavFileOutput

QUESTION = "What should I plant in a small garden that gets little sun?"
WHISPER = "whisper:base"
VOICE = "voice:joe"


def voice_ready(shot) -> None:
    """Whisper base and Piper's Joe in the daemon's store, and the app seeing them."""
    from localllm.model_registry.store import Store
    from localllm.model_registry.transcription import import_whisper_folder
    from localllm.model_registry.voice import import_voice
    from tests.support.real_voice import joe_voice_path
    from tests.support.real_whisper import whisper_base_path

    store = Store(Path(os.environ["LOCALLLM_MODELS"]))
    import_whisper_folder(store, WHISPER, whisper_base_path())
    import_voice(store, VOICE, joe_voice_path())
    services = shot.window.services
    services.library.refresh()
    shot.wait(lambda: services.voice.transcriber == WHISPER and services.voice.voice == VOICE)


def recording(shot, model: str) -> None:
    """A new chat with ``model``, the question being spoken: about two seconds in, the meter
    moving and the time counting."""
    from localllm.app.gui.services.audio_sources import WavFile
    from tests.gui.screenshot_scenes import open_new_chat
    from tests.support.speech import speak

    window = shot.window
    window.show_page("Chat")
    open_new_chat(shot, model)
    page = window.chat_page
    page.settings_button.setChecked(False)
    page.settings.model_notice.dismiss()  # Gemma is a base model: said in the other pictures
    page.composer.editor.clear()
    voice = page.voice
    spoken = shot.folder / "question.wav"
    if not spoken.exists():
        speak(QUESTION, spoken)
    voice.use_input(WavFile(spoken, speed=1.0))
    voice.toggle()
    shot.wait(lambda: voice.recording is not None and voice.recording.seconds >= 2.0)
    shot.wait(lambda: voice.meter.value() > 30)  # a word, not the gap between two


def transcript(shot) -> None:
    """The take stopped (as Esc stops it) and its words in the message, ready to edit."""
    voice = shot.window.chat_page.voice
    shot.wait(lambda: voice.source is not None and voice.source.done)
    voice.stop()
    shot.wait(lambda: voice.phase == "idle", timeout=180)
    assert voice.editor.toPlainText().strip(), voice.status.text()


def use_theme(shot, mode: str) -> None:
    """``mode`` ("light" or "dark"), picked on the Settings page as a user picks it."""
    page = shot.window.settings_page
    page.theme.setCurrentIndex(page.theme.findData(mode))
    page.theme.activated.emit(page.theme.currentIndex())
    dark = mode == "dark"
    shot.wait(lambda: (shot.app.palette().window().color().lightness() < 128) == dark)


class HeldSpeakers(WavFileOutput):
    """``WavFileOutput`` that stays playing until stopped, as speakers do for the length of the
    sound: the picture catches the answer being read, whatever the machine's speed."""

    def play(self, wav: bytes, parent, done, failed) -> None:
        self.path.write_bytes(wav)
        self.played += 1


def read_aloud(shot) -> None:
    """The transcribed question sent, Gemma's answer, and the pointer on its Read aloud button,
    clicked: Piper has spoken it and it is being read (the status line says so)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QCursor
    from PySide6.QtTest import QTest

    chat, page = shot.window.services.chat, shot.window.chat_page
    page.settings.system_prompt.setPlainText("You are a helpful gardener. Answer in a sentence.")
    page.settings.temperature.setValue(0.3)
    page.settings.max_tokens.setValue(60)
    page.settings.advanced.seed.setValue(7)  # the same answer each time the pictures are made
    page.settings.flush()
    before = len(chat.session.messages)
    QTest.keyClick(page.composer.editor, Qt.Key.Key_Return)
    shot.wait(lambda: len(chat.session.messages) == before + 2, timeout=120)
    shot.wait(lambda: not chat.session.streaming, timeout=300)
    shot.pause(0.3)
    speakers = HeldSpeakers(shot.folder / "read-aloud.wav")
    page.reader.use_output(speakers)
    page.transcript.pick(chat.session.messages[-1].id)
    button = page.transcript.message_actions.read
    shot.wait(lambda: button.isVisible())
    QCursor.setPos(button.mapToGlobal(button.rect().center()))
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    shot.wait(lambda: speakers.played == 1, timeout=120)
    assert page.reader.reading and VOICE in page.status.text(), page.status.text()


def stop_reading(shot) -> None:
    """Esc's work, then the chat deleted (as its menu does): the next theme's pictures start
    from the same chat list as this one's."""
    chat = shot.window.services.chat
    shot.window.chat_page.reader.stop()
    chat.delete(chat.session.conversation.id)
