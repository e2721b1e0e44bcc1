"""The transcription runner: real Whisper base (CTranslate2, int8 on the CPU) in its real
subprocess, hearing real speech that espeak-ng writes; nothing is mocked.

Each spoken sentence is a few seconds of audio, which the model transcribes in a second or two,
so the whole file runs in about a minute on two busy cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from localllm.daemon.transcription.errors import (
    InvalidAudioError,
    InvalidRequestError,
    RunnerCrashed,
    RunnerError,
)
from localllm.daemon.transcription.frames import (
    CancelOp,
    ProtocolError,
    Segment,
    SpecOp,
    TranscribeOp,
    TranscribeRequest,
    TranscriberSpec,
    TranscriptionDone,
    TranscriptionInfo,
    Word,
    decode_event,
    decode_request,
    encode,
)
from localllm.daemon.transcription.process import TranscriberProcess
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import speak, word_error_rate

SENTENCES = (
    "The weather is very nice today, so we will go for a walk in the park.",
    "Please open the window and let some fresh air into the room.",
    "The children are playing football in the garden after school.",
    "She is reading a long book about the history of the city.",
)
MORE = (
    "My brother bought a new car last week and he drives it to work every morning.",
    "We need to buy bread, eggs and cheese from the shop on the corner.",
)
GERMAN = "Guten Morgen, ich trinke jeden Tag einen Kaffee mit Milch."


@dataclass
class Transcript:
    """Everything one request streamed, in order."""

    info: TranscriptionInfo | None = None
    segments: list[Segment] = field(default_factory=list)
    done: TranscriptionDone | None = None

    @property
    def text(self) -> str:
        return "".join(segment.text for segment in self.segments)


async def transcribe(runner: TranscriberProcess, request: TranscribeRequest) -> Transcript:
    transcript = Transcript()
    async for event in runner.transcribe(request):
        if isinstance(event, TranscriptionInfo):
            transcript.info = event
        elif isinstance(event, Segment):
            transcript.segments.append(event)
        else:
            transcript.done = event
    return transcript


def spec(folder: Path) -> TranscriberSpec:
    return TranscriberSpec(str(folder), device="cpu", compute_type="int8", threads=2)


@contextlib.contextmanager
def running(harness, model: TranscriberSpec, **kw) -> Iterator[TranscriberProcess]:
    runner = harness.run(TranscriberProcess.start(model, **kw))
    try:
        yield runner
    finally:
        harness.run(runner.stop(), timeout=30)


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, Path]:
    """Every text of this module spoken, by name: s0..s3, m0, m1, the German one, and a long
    recording (40 s: two of Whisper's 30-second windows, so a cancel can land between them)."""
    folder = tmp_path_factory.mktemp("speech")
    texts = {f"s{i}": text for i, text in enumerate(SENTENCES)}
    texts |= {f"m{i}": text for i, text in enumerate(MORE)}
    texts["long"] = " ".join((*SENTENCES, *MORE, *SENTENCES))
    spoken = {name: speak(text, folder / f"{name}.wav") for name, text in texts.items()}
    spoken["german"] = speak(GERMAN, folder / "german.wav", voice="de")
    return spoken


@pytest.fixture(scope="module")
def model_folder() -> Path:
    return whisper_base_path()


@pytest.fixture(scope="module")
def transcriber(harness, model_folder) -> Iterator[TranscriberProcess]:
    with running(harness, spec(model_folder)) as runner:
        yield runner


@pytest.fixture(scope="module")
def heard(harness, transcriber, speech) -> list[Transcript]:
    """Each sentence transcribed with word timestamps, the language left to detect."""
    requests = [
        TranscribeRequest(str(speech[f"s{i}"]), word_timestamps=True) for i in range(len(SENTENCES))
    ]
    return [harness.run(transcribe(transcriber, request)) for request in requests]


def test_spoken_english_is_transcribed_with_few_word_errors(heard):
    rate = word_error_rate(" ".join(SENTENCES), " ".join(t.text for t in heard))
    assert rate < 0.15, [t.text for t in heard]
    for transcript in heard:
        assert transcript.done is not None
        assert transcript.done.segments == len(transcript.segments) > 0
        assert [s.index for s in transcript.segments] == list(range(len(transcript.segments)))


def test_the_language_is_detected_as_english(heard, transcriber):
    assert transcriber.info.multilingual and "en" in transcriber.info.languages
    for transcript in heard:
        assert transcript.info is not None
        assert transcript.info.language == "en" and transcript.info.language_probability > 0.5


def test_word_timestamps_are_ordered_within_the_audio(heard):
    for transcript in heard:
        assert transcript.info is not None
        words = [word for segment in transcript.segments for word in segment.words]
        assert words, transcript.text
        for segment in transcript.segments:  # the words spell out their segment
            assert "".join(w.word for w in segment.words).strip() == segment.text.strip()
        starts = [w.start for w in words]
        assert starts == sorted(starts)
        assert all(0.0 <= w.start <= w.end <= transcript.info.duration for w in words)
        assert all(0.0 <= w.probability <= 1.0 for w in words)


def test_german_speech_is_translated_into_english(harness, transcriber, speech):
    request = TranscribeRequest(str(speech["german"]), task="translate")
    transcript = harness.run(transcribe(transcriber, request))
    assert transcript.info is not None and transcript.info.language == "de"
    assert "morning" in transcript.text.lower() and "guten" not in transcript.text.lower()


def test_two_requests_at_once_are_both_answered_in_order(harness, transcriber, speech):
    first, second = (TranscribeRequest(str(speech[f"m{i}"]), beam_size=1) for i in (0, 1))

    async def both() -> list[tuple[str, object]]:
        arrivals: list[tuple[str, object]] = []

        async def follow(name: str, request: TranscribeRequest) -> None:
            async for event in transcriber.transcribe(request):
                arrivals.append((name, event))

        await asyncio.gather(follow("first", first), follow("second", second))
        return arrivals

    arrivals = harness.run(both())
    names = [name for name, _ in arrivals]
    assert names == sorted(names, key=["first", "second"].index)  # all of one, then the other
    for name, text in (("first", MORE[0]), ("second", MORE[1])):
        events = [event for each, event in arrivals if each == name]
        assert isinstance(events[0], TranscriptionInfo)
        assert isinstance(events[-1], TranscriptionDone)
        said = "".join(e.text for e in events if isinstance(e, Segment))
        assert word_error_rate(text, said) < 0.3, said


def test_closing_a_stream_early_cancels_it_running_or_queued(harness, model_folder, speech):
    short = TranscribeRequest(str(speech["s1"]), beam_size=1)

    async def scenario(runner: TranscriberProcess) -> tuple[int, Transcript]:
        long = runner.transcribe(TranscribeRequest(str(speech["long"]), beam_size=1))
        info = await anext(long)  # the long one is running
        queued = asyncio.create_task(anext(runner.transcribe(short)))
        await asyncio.sleep(0)  # one turn of the loop: the task sends its request and waits
        queued.cancel()  # cancels it while it waits behind the long one
        assert isinstance(await anext(long), Segment)
        await long.aclose()  # and the long one after its first segment
        return info.id, await transcribe(runner, short)

    with running(harness, spec(model_folder)) as runner:
        long_id, after = harness.run(scenario(runner))
    assert word_error_rate(SENTENCES[1], after.text) < 0.3  # served on, in its turn
    log = "\n".join(runner.last_log_lines(50))  # complete: the runner has stopped
    assert "cancelled before it started" in log
    assert f"request {long_id} cancelled after" in log


def test_a_file_that_is_not_audio_is_an_error_and_the_runner_serves_on(
    harness, transcriber, speech, tmp_path
):
    fake = tmp_path / "speech.wav"
    fake.write_text("This is a text file, not a recording.\n" * 20)
    with pytest.raises(InvalidAudioError, match="not audio") as caught:
        harness.run(transcribe(transcriber, TranscribeRequest(str(fake))))
    assert "Traceback" not in str(caught.value)
    unknown = TranscribeRequest(str(speech["s3"]), language="xx")
    with pytest.raises(InvalidRequestError, match="no language 'xx'"):
        harness.run(transcribe(transcriber, unknown))
    after = harness.run(transcribe(transcriber, TranscribeRequest(str(speech["s3"]))))
    assert word_error_rate(SENTENCES[3], after.text) < 0.3 and transcriber.alive


def test_a_missing_model_is_a_clear_error_at_start(harness, tmp_path):
    missing = tmp_path / "whisper-nowhere"
    with pytest.raises(RunnerError, match="no such folder") as caught:
        harness.run(TranscriberProcess.start(spec(missing)))
    assert str(missing) in str(caught.value)
    half = tmp_path / "whisper-half"
    half.mkdir()
    (half / "config.json").write_text("{}")
    with pytest.raises(RunnerError, match=r"it has no model\.bin, tokenizer\.json"):
        harness.run(TranscriberProcess.start(spec(half)))


def test_killing_the_runner_mid_request_is_a_crash_that_quotes_its_log(
    harness, model_folder, speech, tmp_path
):
    log = tmp_path / "transcriber.log"

    async def scenario(runner: TranscriberProcess) -> RunnerCrashed:
        stream = runner.transcribe(TranscribeRequest(str(speech["long"])))
        await anext(stream)
        os.kill(runner.pid, signal.SIGKILL)
        with pytest.raises(RunnerCrashed) as caught:  # not a stream left waiting
            async for _ in stream:
                pass
        return caught.value

    with running(harness, spec(model_folder), log_path=log) as runner:
        message = str(harness.run(scenario(runner)))
        assert "SIGKILL" in message and "last log lines" in message
        assert "ready in" in message and "s of audio" in message  # the runner's own words
        assert runner.state == "crashed" and not runner.alive
        with pytest.raises(RunnerCrashed):
            harness.run(transcribe(runner, TranscribeRequest(str(speech["s0"]))))
    assert "starting transcriber" in log.read_text()


# -- the parts, without a runner -----------------------------------------------------------


def test_frames_round_trip_and_reject_what_they_do_not_know():
    request = TranscribeRequest("/tmp/a.ogg", "translate", None, "Kubernetes", 0.2, True, True)
    for frame in (SpecOp(TranscriberSpec("/models/w")), TranscribeOp(7, request), CancelOp(7)):
        assert decode_request(encode(frame)) == frame
    word = Word(0.0, 0.5, " Hello", 0.9)
    segment = Segment(3, 0, 0.0, 0.5, " Hello", (word,), -0.2, 0.01, 1.0, 0.0, 0, (2425,))
    assert decode_event(encode(segment)) == segment
    bad = [
        {"op": "transcribe", "id": 1},  # no request
        {**encode(CancelOp(1)), "extra": 1},  # a field nobody knows
        {"op": "forget", "id": 1},  # a tag nobody knows
        {**encode(TranscribeOp(1, request)), "id": True},  # a bool is no id
        encode(TranscribeOp(1, TranscribeRequest("/a", task="summarise"))),  # no such task
    ]
    for message in bad:
        with pytest.raises(ProtocolError):
            decode_request(message)


def test_sliced_features_equal_faster_whispers_own():
    from faster_whisper.feature_extractor import FeatureExtractor

    from localllm.daemon.transcription.worker.features import SlicedFeatureExtractor

    noise = np.random.default_rng(5).standard_normal(16000 * 75 + 123).astype(np.float32)
    for samples in (noise[:300], noise[: 16000 * 3], noise):  # under a slice, and past two
        expected = FeatureExtractor()(samples * 0.1)
        assert np.array_equal(SlicedFeatureExtractor()(samples * 0.1), expected)


def test_word_error_rate_counts_words_not_case_or_punctuation():
    assert word_error_rate("It's eight o'clock.", "it's EIGHT o'clock") == 0.0
    assert word_error_rate("one two three four", "one too three") == 0.5


def test_the_pool_makes_room_before_a_start_and_lets_an_idle_runner_go(harness, model_folder):
    """``Transcribers`` as the daemon builds it: the scheduler's ``free_up`` is asked for the
    runner's estimate before it starts, and ``release_idle`` stops only a runner no request
    holds (what the scheduler calls when a load needs the room)."""
    from localllm.daemon.transcription.pool import transcriber_bytes, transcribers

    asked: list[tuple[str, int]] = []

    async def make_room(name: str, needed: int) -> None:
        asked.append((name, needed))

    async def scenario() -> tuple[bool, bool, bool]:
        pool = transcribers(300.0, make_room=make_room)
        try:
            async with pool.use("whisper:base", model_folder) as runner:
                held = await pool.release_idle()  # in use: not let go
                alive_while_held = runner.alive
            released = await pool.release_idle()
            return held, alive_while_held and not runner.alive, released
        finally:
            await pool.close()

    held, stopped_after, released = harness.run(scenario())
    assert asked == [("whisper:base", transcriber_bytes(model_folder))]
    assert not held and released and stopped_after
