"""Whisper's log-Mel features, computed a minute of audio at a time.

faster-whisper computes them for the whole recording in one go: its STFT frames and their
complex spectrum take some 40 times the audio's own size on the way (an hour of audio, 230
MB as float32, peaked at about 2.5 GB more). Sliced, the same features cost the features
themselves (115 MB an hour) and a slice's work. The values are faster-whisper's: the same
frames, window, FFT and filter bank, the padding taken from where it would lie in the whole
padded signal, and the final scaling (which needs the loudest value of all) done at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from faster_whisper.feature_extractor import FeatureExtractor  # type: ignore[import-untyped]

__all__ = ["SlicedFeatureExtractor"]

_FRAMES_PER_SLICE = 6000  # a minute at Whisper's 100 frames a second
_Floats = npt.NDArray[np.float32]


class SlicedFeatureExtractor(FeatureExtractor):  # type: ignore[misc]
    """A drop-in for the model's ``feature_extractor`` (built from its ``feat_kwargs``)."""

    def __call__(self, waveform: Any, padding: int = 160, chunk_length: int | None = None) -> Any:
        half = int(self.n_fft) // 2
        audio = np.asarray(waveform, dtype=np.float32)
        if audio.ndim != 1 or audio.shape[0] <= half + 1:  # reflecting needs more than that
            return super().__call__(waveform, padding, chunk_length)
        if chunk_length is not None:  # as faster-whisper's own does
            self.n_samples = chunk_length * self.sampling_rate
            self.nb_max_frames = self.n_samples // self.hop_length
        return self._features(audio, padding, half)

    def _features(self, audio: _Floats, padding: int, half: int) -> _Floats:
        hop, n_fft = int(self.hop_length), int(self.n_fft)
        signal = _padded(audio, padding, half)
        frames = (audio.shape[0] + padding) // hop  # the last STFT frame is dropped, as there
        window = np.hanning(n_fft + 1)[:-1].astype(np.float32)
        mel: _Floats = np.empty((self.mel_filters.shape[0], frames), dtype=np.float32)
        for first in range(0, frames, _FRAMES_PER_SLICE):
            last = min(first + _FRAMES_PER_SLICE, frames)
            piece = _take(signal, first * hop, (last - 1) * hop + n_fft)
            stft = self.stft(piece, n_fft, hop, window=window, center=False, return_complex=True)
            magnitudes = np.abs(stft.astype(np.complex64)) ** 2
            mel[:, first:last] = self.mel_filters @ magnitudes
        np.log10(np.clip(mel, 1e-10, None, out=mel), out=mel)
        np.maximum(mel, mel.max() - 8.0, out=mel)
        mel += 4.0
        mel /= 4.0
        return mel


def _padded(audio: _Floats, padding: int, half: int) -> list[_Floats]:
    """The signal faster-whisper transforms, in three pieces, the audio not copied: ``padding``
    zeros after the audio, then ``half`` samples reflected at each end (``np.pad``'s
    "reflect", for the STFT's centred frames)."""
    tail = np.concatenate([audio[-(half + 1) :], np.zeros(padding, dtype=np.float32)])
    left = audio[1 : half + 1][::-1]
    right = tail[-(half + 1) : -1][::-1]
    return [left, audio, np.concatenate([tail[half + 1 :], right])]


def _take(pieces: Sequence[_Floats], start: int, stop: int) -> _Floats:
    """Samples ``start`` to ``stop`` of the pieces laid end to end."""
    parts, offset = [], 0
    for piece in pieces:
        low, high = max(start - offset, 0), min(stop - offset, piece.shape[0])
        if low < high:
            parts.append(piece[low:high])
        offset += piece.shape[0]
    return np.concatenate(parts)
