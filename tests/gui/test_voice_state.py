"""The voice rules without Qt (``state.voice``, ``state.voice_preferences``): how loud a chunk
is, a take's limit and its WAV file, what the microphone says, where dictated words go, and the
Voice choices kept between runs."""

from __future__ import annotations

import array
import math
import sys
import wave
from pathlib import Path

from localllm.app.gui.state.voice import (
    NO_MODEL,
    AudioFormat,
    Recording,
    audio_files,
    file_heading,
    level,
    mic_look,
    spoken_lead,
)
from localllm.app.gui.state.voice_preferences import VoicePreferences, in_use, language_code


def _tone(amplitude: float, seconds: float = 0.1, rate: int = 16_000) -> bytes:
    samples = array.array(
        "h", (int(amplitude * 32767 * math.sin(i / 8)) for i in range(int(seconds * rate)))
    )
    if sys.byteorder == "big":
        samples.byteswap()
    return samples.tobytes()


def test_the_level_is_zero_for_silence_and_rises_with_loudness():
    assert level(b"") == 0.0
    assert level(bytes(3200)) == 0.0
    quiet, loud = level(_tone(0.01)), level(_tone(0.8))
    assert 0 < quiet < 0.5 < loud <= 1.0
    assert level(_tone(0.0005)) == 0.0  # below the meter's bottom


def test_a_take_keeps_its_frames_up_to_its_limit_and_writes_a_wav(tmp_path):
    take = Recording(AudioFormat(16_000), limit_seconds=0.35)
    assert take.add(_tone(0.5)) > 0 and not take.full
    for _ in range(3):
        take.add(_tone(0.5))
    assert take.full and take.seconds == 0.35 and take.worth_sending
    take.stop()
    assert take.add(_tone(0.5)) == 0.0 and take.seconds == 0.35
    with wave.open(str(take.write_wav(tmp_path / "take.wav")), "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 16_000)
        assert wav.getnframes() == 5600
    click = Recording(AudioFormat(16_000))
    click.add(_tone(0.5, seconds=0.1))
    assert not click.worth_sending


def test_the_microphone_says_why_it_is_off_and_what_a_click_does():
    assert mic_look("idle", "") == mic_look("idle", "", "no microphone")
    off = mic_look("idle", "")
    assert not off.enabled and off.tooltip == NO_MODEL and "whisper:base" in NO_MODEL
    ready = mic_look("idle", "whisper:base")
    assert ready.enabled and "whisper:base" in ready.tooltip and not ready.recording
    no_device = mic_look("idle", "whisper:base", "No microphone found.")
    assert no_device.enabled and no_device.tooltip == "No microphone found."
    recording = mic_look("recording", "whisper:base")
    assert recording.enabled and recording.recording and "Esc" in recording.tooltip
    assert not mic_look("transcribing", "whisper:base").enabled


def test_dictated_words_and_file_transcripts_sit_apart_from_the_text_before():
    assert spoken_lead("") == "" and spoken_lead("Note:") == " " and spoken_lead("a ") == ""
    assert file_heading("", "a.wav") == "Transcript of a.wav:\n"
    assert file_heading("Some text", "a.wav") == "\nTranscript of a.wav:\n"
    paths = [Path("/x/a.WAV"), Path("/x/b.txt"), Path("/x/c.m4a")]
    assert audio_files(paths) == [paths[0], paths[2]]


def test_languages_are_codes_and_names_and_nothing_else():
    assert language_code("") == "" and language_code("Detect it from the speech") == ""
    assert language_code("German") == "de" and language_code("German (de)") == "de"
    assert language_code(" SV ") == "sv"
    assert language_code("Klingon!") is None and language_code("english1") is None


def test_the_choices_are_kept_and_a_missing_model_falls_back():
    store: dict[str, object] = {}

    class Store:
        def value(self, key: str) -> object:
            return store.get(key)

        def setValue(self, key: str, value: object) -> None:
            store[key] = value

    assert VoicePreferences.read(Store()) == VoicePreferences()
    chosen = VoicePreferences("whisper:small", "de", "voice:joe")
    chosen.save(Store())
    assert VoicePreferences.read(Store()) == chosen
    store["voice/language"] = "not a language"
    assert VoicePreferences.read(Store()).language == ""
    assert in_use("whisper:small", ("whisper:base", "whisper:small")) == "whisper:small"
    assert in_use("whisper:gone", ("whisper:base",)) == "whisper:base"
    assert in_use("", ()) == ""
