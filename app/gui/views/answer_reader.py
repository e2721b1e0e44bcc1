"""Read aloud: an answer's Read aloud button speaks it with the voice chosen in Settings, Voice.
The daemon speaks it on a worker (``VoiceService.speak``), then it plays through an
``AudioOutput`` (the speakers, or a WAV file in tests); what it is doing, or why it cannot, goes
to the chat's status line. Reading another answer, or Esc, stops the one being read.

The button shows on answers only while a voice is installed.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.services.audio_outputs import AudioOutput, Speakers
from localllm.app.gui.services.voice import VoiceService
from localllm.app.gui.state.spoken_text import speakable
from localllm.app.gui.views.transcript import Transcript
from localllm.app.gui.workers import Job

__all__ = ["AnswerReader"]


class AnswerReader(QObject):
    message = Signal(str)  # for the status line ("" when done)

    def __init__(
        self,
        voice: VoiceService,
        transcript: Transcript,
        output: AudioOutput | None = None,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self.voice, self.transcript = voice, transcript
        self.output: AudioOutput = output or Speakers()
        self.reading = False
        self._job: Job | None = None
        transcript.read_aloud_requested.connect(self.read)
        voice.models_changed.connect(self._offer)
        self._offer()

    def use_output(self, output: AudioOutput) -> None:
        self.stop()
        self.output = output

    def read(self, markdown: str) -> None:
        self.stop()
        text = speakable(markdown)
        problem = self.output.problem()
        if not text or problem:
            self.message.emit(problem)
            return
        self.reading = True
        self.message.emit(f"Reading the answer aloud with {self.voice.voice}… Esc stops.")
        self._job = self.voice.speak(text, self._play, self._failed)

    def stop(self) -> bool:
        """Stop reading; False when nothing was being read."""
        if not self.reading:
            return False
        if self._job is not None:
            self._job.cancel()
        self.output.stop()
        self._job, self.reading = None, False
        self.message.emit("")
        return True

    def _play(self, wav: bytes) -> None:
        self._job = None
        self.output.play(wav, self, self._done, self._could_not_play)

    def _done(self) -> None:
        self.reading = False
        self.message.emit("")

    def _failed(self, error: Exception) -> None:
        self._job, self.reading = None, False
        self.message.emit(f"Could not read it aloud: {error}")

    def _could_not_play(self, why: str) -> None:
        self.reading = False
        self.message.emit(f"Could not play it: {why}")

    def _offer(self) -> None:
        actions = self.transcript.message_actions
        actions.can_read = bool(self.voice.voice)
        actions.hide()  # shown again, with or without the button, under the pointer
