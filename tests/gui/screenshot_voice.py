"""The voice scenes ``make_screenshots`` sets up (``--only voice`` makes just these): the
composer's microphone recording, with its level meter, and the transcript it leaves in the
message, in the light and the dark theme.

The speech is real: a question spoken by espeak-ng, played into the app's own recording
pipeline from a WAV file at the pace it was spoken (the microphone's stand-in, as in the tests),
and transcribed by the real Whisper base (the real-model tier), imported as a user imports a
Whisper folder. Like ``screenshot_scenes``, no scene takes a picture itself.
"""

from __future__ import annotations

import os
from pathlib import Path

QUESTION = "What should I plant in a small garden that gets little sun?"
WHISPER = "whisper:base"


def voice_ready(shot) -> None:
    """Whisper base in the daemon's store, and the app seeing it."""
    from localllm.model_registry.store import Store
    from localllm.model_registry.transcription import import_whisper_folder
    from tests.support.real_whisper import whisper_base_path

    import_whisper_folder(Store(Path(os.environ["LOCALLLM_MODELS"])), WHISPER, whisper_base_path())
    services = shot.window.services
    services.library.refresh()
    shot.wait(lambda: services.voice.transcriber == WHISPER)


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
