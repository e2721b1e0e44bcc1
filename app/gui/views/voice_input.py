"""The composer's microphone: click to talk, click again (or Esc) to stop; the words land in
the message at the cursor, to edit before sending. While it records, a row in the composer
shows a level meter and the time; while the daemon transcribes, the row says so; an error is
said there, never raised. Its menu (the arrow) transcribes an audio file, and audio files
dropped on the conversation or the message become their transcript, each under a line that
names it.

Drawing and wiring only: ``state.voice`` decides what the button says and keeps the take,
``VoiceService`` transcribes off the UI thread, and the sound comes through an ``AudioInput``
(the microphone, or a WAV file in tests).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QDropEvent, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QMenu,
    QPlainTextEdit,
    QProgressBar,
    QToolButton,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE, palette
from localllm.app.gui.design.widgets import set_kind
from localllm.app.gui.services.audio_sources import (
    AudioInput,
    AudioSource,
    AudioSourceError,
    Microphone,
)
from localllm.app.gui.services.voice import VoiceService
from localllm.app.gui.state.voice import (
    AUDIO_SUFFIXES,
    NO_MODEL,
    MicPhase,
    Recording,
    audio_files,
    file_heading,
    mic_look,
    spoken_lead,
)
from localllm.app.gui.views.file_dialogs import open_file_name
from localllm.app.gui.views.plain_text import plain_label
from localllm.app.gui.workers import Job

__all__ = ["VoiceInput"]

_AUDIO = "Audio (" + " ".join(f"*{s}" for s in sorted(AUDIO_SUFFIXES)) + ")"


class VoiceInput(QWidget):
    """The row the composer shows while it listens or transcribes; ``button`` goes among the
    composer's tools."""

    other_files_dropped = Signal(object)  # list[Path]: dropped with audio, not audio themselves

    def __init__(
        self,
        voice: VoiceService,
        editor: QPlainTextEdit,
        icons=None,
        audio: AudioInput | None = None,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.voice, self.editor, self._icons = voice, editor, icons
        self.audio: AudioInput = audio or Microphone()
        self.phase: MicPhase = "idle"
        self.source: AudioSource | None = None
        self.recording: Recording | None = None
        self._job: Job | None = None
        self._cursor: QTextCursor | None = None  # where the words go; it follows edits
        self._first = True  # the next words are the first of this transcript
        self._files: list[Path] = []  # waiting to be transcribed, in order
        self._problem: str | None = None  # why the microphone cannot record; asked once
        self._dark = False
        self.button = QToolButton()
        self.button.setCheckable(True)
        self.button.setAutoRaise(True)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        set_kind(self.button, "mic")
        menu = QMenu(self.button)
        self.file_action = menu.addAction("Transcribe an audio file…", self._pick_file)
        self.button.setMenu(menu)
        self.button.clicked.connect(lambda _checked: self.toggle())
        self.meter = QProgressBar(textVisible=False)
        self.meter.setAccessibleName("Microphone level")
        self.meter.setRange(0, 100)
        self.meter.setFixedSize(96, 6)
        self.status = plain_label(objectName="caption", wordWrap=True)
        self.status.setAccessibleName("Voice input")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(SPACE.sm)
        row.addWidget(self.meter, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.status, 1)
        voice.models_changed.connect(self._show)
        voice.preferences_changed.connect(lambda _p: self._show())
        self._say("")  # nothing to say yet: the row (and its meter) takes no room
        self.retheme()
        self._show()

    def use_input(self, audio: AudioInput) -> None:
        """Record from ``audio`` from the next take on."""
        self.audio, self._problem = audio, None
        self._show()

    def retheme(self, dark: bool | None = None) -> None:
        """The icons in the theme's colours: a red stop square while recording."""
        if dark is not None:
            self._dark = dark
        if self._icons is not None:
            red = palette(self._dark).danger
            recording = self.phase == "recording"
            icon = self._icons.get("stop", red) if recording else self._icons.get("mic")
            self.button.setIcon(icon)

    # recording

    def toggle(self) -> None:
        """What a click on the microphone does: start a take, or stop the one going."""
        if self.phase == "recording":
            self.stop()
        elif self.phase == "idle":
            self.start()
        self._show()

    def start(self) -> None:
        if not self.voice.transcriber:
            return self._say(NO_MODEL)
        try:
            source = self.audio.open(self)
        except AudioSourceError as error:
            return self._say(str(error))
        self.source, self.recording = source, Recording(source.format)
        self.phase = "recording"
        self.meter.setValue(0)
        self._say("Listening… 0:00. Click the microphone or press Esc to stop.", meter=True)
        source.start(self._heard, self._source_failed)
        self._show()

    def stop(self) -> bool:
        """Stop the take going and send it off; False when none was going (Esc goes on to
        stop a reply)."""
        if self.phase != "recording" or self.recording is None:
            return False
        self._close_source()
        take, self.recording = self.recording, None
        take.stop()
        if not take.worth_sending:
            self.phase = "idle"
            self._say("Nothing was recorded: hold on a little longer before you stop.")
        else:
            self._transcribe(take, "")
        self._show()
        return True

    def _heard(self, pcm: bytes) -> None:
        take = self.recording
        if take is None:
            return
        self.meter.setValue(round(100 * take.add(pcm)))
        seconds = int(take.seconds)
        self._say(
            f"Listening… {seconds // 60}:{seconds % 60:02d}. "
            "Click the microphone or press Esc to stop.",
            meter=True,
        )
        if take.full:
            self.stop()

    def _source_failed(self, why: str) -> None:
        if self.phase == "recording":
            self._close_source()
            self.recording, self.phase = None, "idle"
            self._say(why)
            self._show()

    def _close_source(self) -> None:
        if self.source is not None:
            self.source.stop()

    # files

    def transcribe_files(self, paths: list[Path]) -> None:
        """Each audio file's transcript into the message, one after the other."""
        self._files.extend(paths)
        if self.phase == "idle":
            self._next_file()

    def _pick_file(self) -> None:
        path, _ = open_file_name(self, "Transcribe an audio file", _AUDIO)
        if path:
            self.transcribe_files([Path(path)])

    def _next_file(self) -> None:
        if self._files:
            path = self._files.pop(0)
            self._transcribe(path, path.name)

    def watch_drops(self, widget: QWidget) -> None:
        """Audio files dropped on ``widget`` become their transcript; other files dropped with
        them go on through ``other_files_dropped``. Installed after any other watcher of the
        widget, so it sees the drop first."""
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not isinstance(event, QDropEvent):  # a drop, or a drag (enter, move) over it
            return super().eventFilter(watched, event)
        files = _files(event)
        audio = audio_files(files)
        if not audio:
            return super().eventFilter(watched, event)
        event.acceptProposedAction()
        if event.type() == QEvent.Type.Drop:
            others = [p for p in files if p not in audio]
            if others:
                self.other_files_dropped.emit(others)
            if self.voice.transcriber:
                self.transcribe_files(audio)
            else:
                self._say(NO_MODEL)
        return True

    # transcribing

    def _transcribe(self, audio: Recording | Path, name: str) -> None:
        """Stream ``audio``'s words in at the cursor (``name``: a file's, said above them)."""
        self.phase = "transcribing"
        self._cursor = QTextCursor(self.editor.textCursor())
        self._first = True
        if name:
            self._cursor.insertText(file_heading(self._before(), name))
        what = name or "your recording"
        self._say(f"Transcribing {what} with {self.voice.transcriber}…")
        self._job = self.voice.transcribe(audio, self._words, self._finished, self._failed)

    def _words(self, text: str) -> None:
        cursor = self._cursor
        if cursor is None or not text:
            return
        if self._first:
            text = spoken_lead(self._before()) + text.lstrip()
            self._first = False
        cursor.insertText(text)

    def _before(self) -> str:
        cursor = self._cursor
        if cursor is None:
            return ""
        return cursor.block().text()[: cursor.positionInBlock()]

    def _finished(self, _result: object) -> None:
        if self._cursor is not None:
            self.editor.setTextCursor(self._cursor)  # type on after the words
        self._job, self._cursor, self.phase = None, None, "idle"
        self._say("")
        self.editor.setFocus()
        self._show()
        self._next_file()

    def _failed(self, error: Exception) -> None:
        self._job, self._cursor, self.phase = None, None, "idle"
        self._files.clear()
        self._say(f"Could not transcribe: {error}")
        self._show()

    # drawing

    def _say(self, text: str, meter: bool = False) -> None:
        self.status.setText(text)
        self.meter.setVisible(meter)
        self.setVisible(bool(text))

    def _show(self) -> None:
        if self._problem is None:
            self._problem = self.audio.problem()
        look = mic_look(self.phase, self.voice.transcriber, self._problem)
        self.button.setEnabled(look.enabled)
        self.button.setChecked(look.recording)
        self.button.setToolTip(look.tooltip)
        self.button.setAccessibleName(look.name)
        self.button.setText(look.name)
        self.file_action.setEnabled(self.phase == "idle" and bool(self.voice.transcriber))
        self.retheme()


def _files(event: QDropEvent) -> list[Path]:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]
