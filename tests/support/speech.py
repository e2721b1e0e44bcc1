"""Real speech for the transcription tests, and the measure of how well it was heard.

Sentences are spoken by espeak-ng (Debian's ``espeak-ng`` package): a synthetic voice, but
real audio that a real model must recognise, written in a second and the same every time.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import wave
from pathlib import Path

import pytest

__all__ = ["SENTENCES", "speak", "spoken_clip", "word_error_rate"]

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")  # "o'clock" stays one word; punctuation goes
# Plain words, no numbers or names a transcript may spell another way: the error rate then
# measures hearing, not spelling. About 4 s each in espeak-ng's voice; cycled past the end.
SENTENCES = (
    "The morning train was late again, so most of the passengers waited on the cold platform.",
    "She opened the window and listened to the birds singing in the garden below.",
    "A good cup of coffee can make a long meeting feel a little shorter.",
    "The old bridge over the river was closed for repairs during the whole summer.",
    "Children ran along the beach, looking for shells and small crabs in the sand.",
    "He forgot his umbrella at home, and the rain started just as he left the office.",
    "The library keeps its oldest books in a quiet room at the back of the building.",
    "After dinner we walked slowly through the park while the sun went down.",
    "The farmer checked the weather every evening before deciding what to plant.",
    "Our neighbours painted their front door a bright shade of yellow last week.",
    "The teacher asked the class to read the first chapter before the next lesson.",
    "A strong wind blew across the hills and bent the tall grass toward the valley.",
    "The baker wakes up early to prepare fresh bread for the small village shop.",
    "They packed their bags the night before, so the trip began without any hurry.",
    "The museum was full of visitors who wanted to see the new painting exhibition.",
    "He learned to cook simple meals when he moved into his first apartment.",
    "The cat slept on the warm stones near the kitchen door for most of the afternoon.",
    "Several ships waited outside the harbour until the storm had passed.",
    "She wrote a long letter to her grandmother and posted it on the way to work.",
    "The road climbed slowly through the forest and ended at a quiet lake.",
    "Every spring the town holds a market where farmers sell fruit and flowers.",
    "The engineer explained the plan carefully, and everyone agreed to try it.",
)


def speak(text: str, path: Path, voice: str = "en-us") -> Path:
    """``text`` spoken in ``voice`` as a WAV file at ``path``; skips the test without
    espeak-ng (``apt-get install espeak-ng``)."""
    program = shutil.which("espeak-ng")
    if program is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng): no speech to test")
    subprocess.run([program, "-v", voice, "-w", str(path), text], check=True, timeout=60)
    return path


def spoken_clip(folder: Path, seconds: float, pause: float = 0.3) -> tuple[Path, str, float]:
    """``SENTENCES`` spoken one by one and joined, ``pause`` seconds of silence after each,
    until the clip lasts at least ``seconds``: its path, what was said and its length."""
    params, frames, said, length = None, [], [], 0.0
    while length < seconds:
        sentence = SENTENCES[len(said) % len(SENTENCES)]
        with wave.open(str(speak(sentence, folder / f"sentence-{len(said)}.wav")), "rb") as part:
            params = params or part.getparams()
            if part.getparams()[:3] != params[:3]:
                raise RuntimeError(f"espeak-ng changed format mid-clip: {part.getparams()}")
            frames.append(part.readframes(part.getnframes()))
        frames.append(b"\0" * int(params.framerate * pause) * params.sampwidth * params.nchannels)
        said.append(sentence)
        length = sum(map(len, frames)) / (params.framerate * params.sampwidth * params.nchannels)
    assert params is not None
    clip = folder / "clip.wav"
    with wave.open(str(clip), "wb") as out:
        out.setparams(params)
        out.writeframes(b"".join(frames))
    with wave.open(str(clip), "rb") as written:  # its length as a reader sees it
        measured = written.getnframes() / written.getframerate()
    return clip, " ".join(said), measured


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
