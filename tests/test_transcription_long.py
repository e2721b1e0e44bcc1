"""Long recordings: read in pieces cut where the speech pauses (the runner's memory stays that
of a piece however long the file), and read by faster-whisper's batched pipeline where nobody
sees the segment times. Real Whisper base in its real runner process on a real 70 s clip that
espeak-ng speaks, a sentence at a time with pauses between."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from faster_whisper.audio import decode_audio  # type: ignore[import-untyped]

from localllm.daemon.transcription.frames import TranscribeRequest, TranscriberSpec
from localllm.daemon.transcription.pool import transcriber_bytes
from localllm.daemon.transcription.process import TranscriberProcess
from localllm.daemon.transcription.worker.audio import audio_pieces
from tests.support.process_memory import peak_resident_bytes
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import spoken_clip, word_error_rate
from tests.test_transcription_runner import Transcript, transcribe

pytestmark = pytest.mark.slow

RATE = 16_000
PIECE = 20.0  # seconds (the least a piece may be): a 70 s clip is read in three pieces


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> tuple[Path, str, float]:
    return spoken_clip(tmp_path_factory.mktemp("long"), 70.0)


@contextlib.contextmanager
def runner(harness, **spec) -> Iterator[TranscriberProcess]:
    model = TranscriberSpec(str(whisper_base_path()), "cpu", "int8", threads=2, **spec)
    process = harness.run(TranscriberProcess.start(model))
    try:
        yield process
    finally:
        harness.run(process.stop(), timeout=30)


def test_pieces_are_the_whole_recording_cut_in_its_pauses(clip):
    path, _, seconds = clip
    recording = audio_pieces(str(path), RATE, PIECE)
    pieces = list(recording)
    whole = decode_audio(str(path), RATE)  # faster-whisper's own reading of the whole file
    assert len(pieces) == 3 and abs(recording.stated - seconds) < 0.01
    assert np.array_equal(np.concatenate([p.samples for p in pieces]), whole)
    assert [p.start for p in pieces] == [
        0.0,
        *np.cumsum([p.samples.size / RATE for p in pieces])[:-1],
    ]
    assert recording.seconds == pytest.approx(whole.size / RATE)
    for piece in pieces[1:]:  # each cut lies in a pause: a tenth of a second of near silence
        cut = round(piece.start * RATE)
        around = whole[cut - 800 : cut + 800]
        assert np.sqrt(np.mean(np.square(around))) < 0.01
    # what is held at once: a piece, and what must be read before it may end (30 s)
    assert max(p.samples.size for p in pieces[:-1]) <= PIECE * RATE
    assert pieces[-1].samples.size <= (PIECE + 30 + 1) * RATE


def test_a_recording_read_in_pieces_is_heard_as_a_whole(harness, clip):
    path, said, seconds = clip
    with runner(harness, piece_seconds=PIECE) as process:
        heard: Transcript = harness.run(
            transcribe(process, TranscribeRequest(str(path), word_timestamps=True))
        )
    assert heard.info is not None and heard.info.language == "en"
    assert heard.done is not None and heard.done.duration == pytest.approx(seconds, abs=0.01)
    # as good as the whole file read at once (0.015 on a clip like this: bench/RESULTS.md); a
    # piece that lost sentences (as a prompted one did) is 0.1 or more
    assert word_error_rate(said, heard.text) < 0.05, heard.text
    starts = [segment.start for segment in heard.segments]
    assert starts == sorted(starts) and heard.segments[-1].end > seconds - 10
    words = [word.start for segment in heard.segments for word in segment.words]
    assert words == sorted(words) and words[-1] > PIECE * 2  # the last piece's own times
    assert [segment.index for segment in heard.segments] == list(range(len(heard.segments)))
    # read sequentially (its times show): about a segment a sentence, as subtitles need
    assert max(segment.end - segment.start for segment in heard.segments) < 10


def test_the_batched_pipeline_reads_a_long_recording_when_times_do_not_show(harness, clip):
    path, said, _ = clip
    with runner(harness) as process:
        untimed = harness.run(
            transcribe(process, TranscribeRequest(str(path), timed_segments=False))
        )
        peak = peak_resident_bytes(process.pid)
    # what making room before a start counts on: the most the runner takes, batching included
    assert peak <= transcriber_bytes(whisper_base_path()) < 2 * peak
    assert word_error_rate(said, untimed.text) < 0.15, untimed.text
    # a segment per chunk of up to 30 s (the sequential read writes one a sentence: above)
    assert max(s.end - s.start for s in untimed.segments) > 15
