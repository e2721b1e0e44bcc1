"""The Settings page's Voice section: the model that transcribes what you say (among the
installed models whose capabilities include "transcription"), the language it listens for
(detected, or a code), and the voice that reads answers (the "speech" models, if any). With no
transcription model it offers to download whisper:base or import a Whisper folder; with no
voice, to import a Piper voice.

Drawing and wiring only: ``VoiceService`` keeps the choices (in ``QSettings``) and knows the
models; the window pulls and imports.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.services.voice import VoiceService
from localllm.app.gui.state.voice_preferences import LANGUAGES, language_code
from localllm.app.gui.views.file_dialogs import existing_directory, open_file_name
from localllm.app.gui.views.plain_text import plain_label

__all__ = ["OFFERED_TRANSCRIBER", "VoiceSection"]

OFFERED_TRANSCRIBER = "whisper:base"  # in the catalog: about 150 MB, 99 languages


def _language_label(code: str) -> str:
    name = dict(LANGUAGES).get(code)
    if not code:
        return str(name)
    return f"{name} ({code})" if name else code


class VoiceSection(QGroupBox):
    pull_requested = Signal(str)
    import_requested = Signal(object)  # Path: a Whisper model's folder, or a Piper voice

    def __init__(self, voice: VoiceService, parent: QWidget | None = None):
        super().__init__("Voice", parent)
        self.voice = voice
        self.transcriber = QComboBox()
        self.transcriber.setAccessibleName("Speech-to-text model")
        self.language = QComboBox(editable=True)
        self.language.setAccessibleName("Language you speak")
        self.language.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.language.setToolTip("Pick one, or type its ISO 639-1 code (sv, fi, el…)")
        for code, _name in LANGUAGES:
            self.language.addItem(_language_label(code), code)
        self.reader = QComboBox()
        self.reader.setAccessibleName("Voice that reads answers aloud")
        self.note = plain_label(objectName="muted", wordWrap=True)
        self.note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.pull = QPushButton(f"Pull {OFFERED_TRANSCRIBER}")
        self.pull.setToolTip(f"Download {OFFERED_TRANSCRIBER} (about 150 MB): 99 languages")
        self.pull.clicked.connect(lambda: self.pull_requested.emit(OFFERED_TRANSCRIBER))
        self.import_folder = QPushButton("Import a Whisper folder…")
        self.import_folder.setToolTip("A Whisper model in CTranslate2 form (faster-whisper's)")
        self.import_folder.clicked.connect(self._pick_folder)
        self.import_voice = QPushButton("Import a Piper voice…")
        self.import_voice.setToolTip("A Piper voice: its .onnx file, with its .onnx.json beside it")
        self.import_voice.clicked.connect(self._pick_voice)
        form = QFormLayout()
        form.addRow("Speech to text", self.transcriber)
        form.addRow("Language", self.language)
        form.addRow("Read aloud with", self.reader)
        offers = QHBoxLayout()
        offers.setContentsMargins(0, 0, 0, 0)
        offers.addWidget(self.pull)
        offers.addWidget(self.import_folder)
        offers.addWidget(self.import_voice)
        offers.addStretch(1)
        column = QVBoxLayout(self)
        column.addLayout(form)
        column.addWidget(self.note)
        column.addLayout(offers)
        self.transcriber.activated.connect(lambda _i: self._picked())
        self.reader.activated.connect(lambda _i: self._picked())
        self.language.activated.connect(lambda _i: self._language_picked())
        line = self.language.lineEdit()
        if line is not None:
            line.editingFinished.connect(self._language_picked)
        voice.models_changed.connect(self.show_choices)
        voice.preferences_changed.connect(lambda _p: self.show_choices())
        self.show_choices()

    def show_choices(self) -> None:
        voice = self.voice
        _fill(self.transcriber, voice.transcribers, voice.transcriber, "None installed")
        _fill(self.reader, voice.voices, voice.voice, "No voice installed")
        code = voice.preferences.language
        index = self.language.findData(code)
        if index < 0:
            self.language.addItem(_language_label(code), code)
            index = self.language.count() - 1
        self.language.setCurrentIndex(index)
        missing = not voice.transcribers
        self.note.setText(
            "No speech-to-text model is installed: the microphone in the chat needs one."
            if missing
            else "The microphone in the chat records; the words land in your message to edit."
        )
        self.pull.setVisible(missing)
        self.import_folder.setVisible(missing)
        self.import_voice.setVisible(not voice.voices)

    def _picked(self) -> None:
        chosen = replace(
            self.voice.preferences,
            transcriber=self.transcriber.currentData() or "",
            voice=self.reader.currentData() or "",
        )
        if chosen != self.voice.preferences:
            self.voice.choose(chosen)

    def _language_picked(self) -> None:
        """A picked language, or a typed code or name; anything else is put back."""
        index = self.language.currentIndex()
        typed = self.language.currentText()
        picked = self.language.itemData(index) if self.language.itemText(index) == typed else None
        code = picked if isinstance(picked, str) else language_code(typed)
        if code is None or code == self.voice.preferences.language:
            self.show_choices()
            return
        self.voice.choose(replace(self.voice.preferences, language=code))

    def _pick_voice(self) -> None:
        path, _ = open_file_name(self, "Import a Piper voice", "Piper (*.onnx)")
        if path:
            self.import_requested.emit(Path(path))

    def _pick_folder(self) -> None:
        folder = existing_directory(self, "Import a Whisper model's folder")
        if folder:
            self.import_requested.emit(Path(folder))


def _fill(box: QComboBox, names: tuple[str, ...], current: str, empty: str) -> None:
    box.clear()
    for name in names:
        box.addItem(name, name)
    if not names:
        box.addItem(empty, "")
    box.setEnabled(bool(names))
    box.setCurrentIndex(max(0, box.findData(current)))
