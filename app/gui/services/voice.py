"""Speech in the app: which installed models transcribe and which speak (read from the
library's rows, whose capabilities come with the details it fetches anyway), the Settings
page's Voice choices (kept in ``QSettings``), and transcriptions and answers read aloud on the
network workers.

A recording is written as a WAV file in the system's temporary folder on the worker that sends
it, and removed when its transcription ends, fails or is dropped; an audio file is sent as it
is. The words come back a segment at a time, as the model hears them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.state.chat_choice import Remembered
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.gateway_calls import GatewayError
from localllm.app.gui.state.spoken_text import sized_wav
from localllm.app.gui.state.voice import NO_MODEL, Recording
from localllm.app.gui.state.voice_preferences import VoicePreferences, in_use
from localllm.app.gui.workers import Job, Workers

__all__ = ["NO_VOICE", "SPEECH", "TRANSCRIPTION", "VoiceService"]

TRANSCRIPTION = "transcription"  # the daemon's capability: Whisper models
SPEECH = "speech"  # the daemon's capability: Piper voices
NO_VOICE = "No voice is installed: import a Piper voice (Settings, Voice) to hear answers."


class VoiceService(QObject):
    models_changed = Signal()  # the installed models that transcribe or speak changed
    preferences_changed = Signal(object)  # VoicePreferences

    def __init__(
        self, gateway: Gateway, net: Workers, library: ModelLibrary, parent: QObject | None = None
    ):
        super().__init__(parent)
        self._gateway, self._net, self._library = gateway, net, library
        self.transcribers: tuple[str, ...] = ()
        self.voices: tuple[str, ...] = ()
        self.preferences = VoicePreferences()
        self._store: Remembered | None = None
        table = library.table
        for signal in (table.rowsInserted, table.rowsRemoved, table.dataChanged):
            signal.connect(lambda *_: self._look())
        table.modelReset.connect(self._look)

    @property
    def transcriber(self) -> str:
        """The model that transcribes now ("" when none is installed)."""
        return in_use(self.preferences.transcriber, self.transcribers)

    @property
    def voice(self) -> str:
        """The voice that reads answers aloud ("" when none is installed)."""
        return in_use(self.preferences.voice, self.voices)

    def remember_in(self, store: Remembered) -> None:
        """Read the choices from ``store``, and keep every later choice there."""
        self._store = store
        self.choose(VoicePreferences.read(store))

    def choose(self, preferences: VoicePreferences) -> None:
        self.preferences = preferences
        if self._store is not None:
            preferences.save(self._store)
        self.preferences_changed.emit(preferences)

    def transcribe(
        self,
        audio: Recording | Path,
        on_text: Callable[[str], object],
        on_done: Callable[[object], object],
        on_error: Callable[[Exception], object],
    ) -> Job | None:
        """``audio``'s words, streamed to ``on_text``; None (and ``on_error``) without a model."""
        model, language = self.transcriber, self.preferences.language
        if not model:
            on_error(GatewayError(NO_MODEL))
            return None
        words = partial(self._words, audio, model, language)  # runs on the worker
        return self._net.stream(words, on_text, on_done, on_error)

    def speak(
        self,
        text: str,
        on_audio: Callable[[bytes], object],
        on_error: Callable[[Exception], object],
    ) -> Job | None:
        """``text`` spoken by the chosen voice, as a WAV file's bytes; None (and ``on_error``)
        without a voice."""
        voice = self.voice
        if not voice:
            on_error(GatewayError(NO_VOICE))
            return None
        return self._net.call(
            lambda: sized_wav(self._gateway.speak(text, voice)), on_audio, on_error
        )

    def _words(self, audio: Recording | Path, model: str, language: str) -> Iterator[str]:
        if isinstance(audio, Path):
            yield from self._gateway.transcribe_text(audio, model, language)
            return
        handle, name = tempfile.mkstemp(prefix="localllm-recording-", suffix=".wav")
        os.close(handle)
        path = Path(name)
        try:
            audio.write_wav(path)
            yield from self._gateway.transcribe_text(path, model, language)
        finally:
            with contextlib.suppress(OSError):
                path.unlink()

    def _look(self) -> None:
        rows = [m for m in self._library.models() if not m.remote]
        transcribers = tuple(m.name for m in rows if TRANSCRIPTION in (m.capabilities or ()))
        voices = tuple(m.name for m in rows if SPEECH in (m.capabilities or ()))
        if (transcribers, voices) != (self.transcribers, self.voices):
            self.transcribers, self.voices = transcribers, voices
            self.models_changed.emit()
