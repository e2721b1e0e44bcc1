"""Where an answer read aloud goes: the seam between the Read aloud action and a device, as
``audio_sources`` is for the microphone.

``Speakers`` plays the daemon's WAV through Qt Multimedia's ``QMediaPlayer`` on the default
output device, from memory (a ``QBuffer``: nothing is written to disk). Without Qt Multimedia
(PySide6-Addons) it says so. ``WavFileOutput`` keeps what would have been played in a WAV file
instead (the tests' speakers: only the device differs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QObject, QUrl

from localllm.app.gui.services.audio_sources import AudioSourceError

__all__ = ["AudioOutput", "Speakers", "WavFileOutput"]

Done = Callable[[], None]
Failed = Callable[[str], None]
NO_PLAYER = (
    "Playing sound needs Qt Multimedia, which this PySide6 lacks: install PySide6-Addons "
    "(pip install pyside6-addons)."
)


class AudioOutput(Protocol):
    def problem(self) -> str: ...  # why it cannot play here ("" when it can)

    def play(self, wav: bytes, parent: QObject, done: Done, failed: Failed) -> None: ...

    def stop(self) -> None: ...


def _multimedia() -> Any:
    try:
        from PySide6 import QtMultimedia
    except ImportError:
        raise AudioSourceError(NO_PLAYER) from None
    return QtMultimedia


class Speakers:
    """The default output device; one sound at a time (a new one stops the last)."""

    def __init__(self) -> None:
        self._player: Any = None
        self._buffer: QBuffer | None = None

    def problem(self) -> str:
        try:
            _multimedia()
        except AudioSourceError as error:
            return str(error)
        return ""

    def play(self, wav: bytes, parent: QObject, done: Done, failed: Failed) -> None:
        try:
            media = _multimedia()
        except AudioSourceError as error:
            return failed(str(error))
        self.stop()
        player = media.QMediaPlayer(parent)
        player.setAudioOutput(media.QAudioOutput(player))
        ended = media.QMediaPlayer.MediaStatus.EndOfMedia

        def status_changed(status: object) -> None:
            if status == ended:
                done()

        player.mediaStatusChanged.connect(status_changed)
        player.errorOccurred.connect(lambda _error, text: failed(text or "It could not play."))
        self._buffer = QBuffer(player)
        self._buffer.setData(QByteArray(wav))
        self._buffer.open(QIODevice.OpenModeFlag.ReadOnly)
        player.setSourceDevice(self._buffer, QUrl("answer.wav"))
        self._player = player
        player.play()

    def stop(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player.deleteLater()
            self._player = self._buffer = None


class WavFileOutput:
    """Speakers that write what they are given to ``path`` (each sound over the last)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.played = 0  # sounds written

    def problem(self) -> str:
        return ""

    def play(self, wav: bytes, parent: QObject, done: Done, failed: Failed) -> None:
        try:
            self.path.write_bytes(wav)
        except OSError as error:
            return failed(f"Could not write {self.path.name}: {error}")
        self.played += 1
        done()

    def stop(self) -> None:
        """Nothing plays on: each sound is written at once."""
