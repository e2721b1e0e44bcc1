"""Real speech for the transcription tests, and the measure of how well it was heard.

Sentences are spoken by espeak-ng (Debian's ``espeak-ng`` package): a synthetic voice, but
real audio that a real model must recognise, written in a second and the same every time.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["speak", "word_error_rate"]

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")  # "o'clock" stays one word; punctuation goes


def speak(text: str, path: Path, voice: str = "en-us") -> Path:
    """``text`` spoken in ``voice`` as a WAV file at ``path``; skips the test without
    espeak-ng (``apt-get install espeak-ng``)."""
    program = shutil.which("espeak-ng")
    if program is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng): no speech to test")
    subprocess.run([program, "-v", voice, "-w", str(path), text], check=True, timeout=60)
    return path


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Words substituted, dropped or added, over the reference's words; case and punctuation
    ignored."""
    expected, heard = _words(reference), _words(hypothesis)
    if not expected:
        return float(bool(heard))
    return _edit_distance(expected, heard) / len(expected)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _edit_distance(expected: list[str], heard: list[str]) -> int:
    """Levenshtein distance over words, one row at a time."""
    previous = list(range(len(heard) + 1))
    for i, word in enumerate(expected, 1):
        current = [i]
        for j, other in enumerate(heard, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
            )
        previous = current
    return previous[-1]
