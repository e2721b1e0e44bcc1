"""The speech runner: the real Piper voice ``en_US-joe-medium`` (onnxruntime on the CPU) in its
real subprocess; nothing is mocked. A sentence takes the voice a fraction of a second.

Piper draws each phoneme's length with some noise (its ``noise_w``), so lengths are compared
with margins that noise cannot cross (a text three times as long, a speed twice as fast),
never to the sample.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import av
import numpy as np
import pytest

from localllm.daemon.runners.types import InvalidRequestError, RunnerCrashed, RunnerError
from localllm.daemon.speech.encoding import encoder_for, supported_formats
from localllm.daemon.speech.frames import (
    AudioChunk,
    CancelOp,
    ProtocolError,
    SpeakerSpec,
    SpeakOp,
    SpeakRequest,
    SpecOp,
    SpeechDone,
    decode_event,
    decode_request,
    encode,
)
from localllm.daemon.speech.process import SpeakerProcess
from localllm.daemon.speech.worker.text import pieces
from tests.support.real_voice import JOE_RATE, joe_voice_path

SENTENCE = "The weather is very nice today, so we will go for a walk in the park."
THREE = (
    "The weather is very nice today, so we will go for a walk in the park. "
    "Please open the window and let some fresh air into the room! "
    "Did the children play football in the garden after school?"
)


@dataclass
class Speech:
    """Everything one request streamed, in order."""

    chunks: list[AudioChunk] = field(default_factory=list)
    done: SpeechDone | None = None

    @property
    def pcm(self) -> bytes:
        return b"".join(chunk.pcm for chunk in self.chunks)

    @property
    def samples(self) -> int:
        return len(self.pcm) // 2


async def speak(runner: SpeakerProcess, request: SpeakRequest) -> Speech:
    speech = Speech()
    async for event in runner.speak(request):
        if isinstance(event, AudioChunk):
            speech.chunks.append(event)
        else:
            speech.done = event
    return speech


def spec(folder: Path) -> SpeakerSpec:
    return SpeakerSpec(str(folder), threads=2)


@contextlib.contextmanager
def running(harness, voice: SpeakerSpec, **kw) -> Iterator[SpeakerProcess]:
    runner = harness.run(SpeakerProcess.start(voice, **kw))
    try:
        yield runner
    finally:
        harness.run(runner.stop(), timeout=30)


@pytest.fixture(scope="module")
def speaker(harness) -> Iterator[SpeakerProcess]:
    with running(harness, spec(joe_voice_path())) as runner:
        yield runner


def test_the_voice_speaks_a_sentence_as_16_bit_pcm_at_its_rate(harness, speaker):
    assert (speaker.info.sample_rate, speaker.info.language) == (JOE_RATE, "en_US")
    assert speaker.info.device == "cpu" and speaker.info.memory_bytes > 20 << 20
    speech = harness.run(speak(speaker, SpeakRequest(SENTENCE)))
    assert speech.done is not None and speech.done.samples == speech.samples
    assert [chunk.index for chunk in speech.chunks] == list(range(speech.done.chunks))
    seconds = speech.samples / JOE_RATE
    assert 2.0 < seconds < 10.0, seconds  # some 15 characters a second
    samples = np.frombuffer(speech.pcm, dtype="<i2")
    assert np.abs(samples).max() > 10_000  # speech, not silence (Piper normalises it)


def test_the_speech_grows_with_the_text_a_chunk_a_sentence(harness, speaker):
    one = harness.run(speak(speaker, SpeakRequest(SENTENCE)))
    three = harness.run(speak(speaker, SpeakRequest(THREE)))
    assert len(one.chunks) == 1 and len(three.chunks) == 3  # streamed sentence by sentence
    assert three.samples > 2 * one.samples


def test_speed_changes_the_length(harness, speaker):
    lengths = {
        speed: harness.run(speak(speaker, SpeakRequest(SENTENCE, speed))).samples
        for speed in (0.5, 1.0, 2.0)
    }
    assert lengths[2.0] * 1.5 < lengths[1.0] < lengths[0.5] / 1.5, lengths


def test_a_long_text_is_spoken_in_pieces_in_order(harness, speaker):
    """A paragraph without a full stop in it is cut (at its commas) rather than spoken in one
    go; the pieces come in the text's order."""
    clause = "one more clause about the garden and the park"
    text = ", ".join([clause] * 30)  # some 1,400 characters, one sentence
    speech = harness.run(speak(speaker, SpeakRequest(text)))
    assert len(speech.chunks) >= len(list(pieces(text))) >= 3
    assert speech.samples / JOE_RATE > 60  # all of it was spoken


def test_a_request_it_cannot_serve_is_an_error_and_it_serves_on(harness, speaker):
    with pytest.raises(InvalidRequestError, match="no text to speak"):
        harness.run(speak(speaker, SpeakRequest(" \n\t ")))
    with pytest.raises(InvalidRequestError, match=r"between 0\.25 and 4"):
        harness.run(speak(speaker, SpeakRequest(SENTENCE, speed=9.0)))
    assert harness.run(speak(speaker, SpeakRequest("Still here."))).samples > 0
    assert speaker.alive


def test_closing_a_stream_early_cancels_it(harness):
    async def scenario(runner: SpeakerProcess) -> tuple[int, Speech]:
        long = runner.speak(SpeakRequest(" ".join([THREE] * 4)))
        first = await anext(long)
        await long.aclose()  # after its first sentence
        return first.id, await speak(runner, SpeakRequest(SENTENCE))

    with running(harness, spec(joe_voice_path())) as runner:
        long_id, after = harness.run(scenario(runner))
    assert after.done is not None and after.samples > 0  # served on, in its turn
    log = "\n".join(runner.last_log_lines(50))  # complete: the runner has stopped
    assert f"request {long_id} cancelled after" in log


def test_a_folder_without_a_voice_is_a_clear_error_at_start(harness, tmp_path):
    with pytest.raises(RunnerError, match="no such folder") as caught:
        harness.run(SpeakerProcess.start(spec(tmp_path / "nowhere")))
    assert str(tmp_path / "nowhere") in str(caught.value)
    half = tmp_path / "half"
    half.mkdir()
    (half / "voice.onnx").write_bytes(b"\x08\x07")
    with pytest.raises(RunnerError, match=r"one \.onnx and its \.onnx\.json"):
        harness.run(SpeakerProcess.start(spec(half)))
    (half / "voice.onnx.json").write_text(
        (joe_voice_path() / "en_US-joe-medium.onnx.json").read_text()
    )
    with pytest.raises(RunnerError, match=r"cannot load the voice voice\.onnx"):
        harness.run(SpeakerProcess.start(spec(half)))


def test_killing_the_runner_mid_request_is_a_crash_that_quotes_its_log(harness, tmp_path):
    log = tmp_path / "speaker.log"

    async def scenario(runner: SpeakerProcess) -> RunnerCrashed:
        stream = runner.speak(SpeakRequest(" ".join([THREE] * 4)))
        await anext(stream)
        os.kill(runner.pid, signal.SIGKILL)
        with pytest.raises(RunnerCrashed) as caught:  # not a stream left waiting
            async for _ in stream:
                pass
        return caught.value

    with running(harness, spec(joe_voice_path()), log_path=log) as runner:
        message = str(harness.run(scenario(runner)))
        assert "SIGKILL" in message and "last log lines" in message
        assert "ready in" in message and "characters at speed 1" in message
        assert runner.state == "crashed" and not runner.alive
        with pytest.raises(RunnerCrashed):
            harness.run(speak(runner, SpeakRequest(SENTENCE)))
    assert "starting speaker" in log.read_text()


def test_the_pool_makes_room_for_what_a_runner_takes_and_lets_an_idle_one_go(harness):
    """Its estimate covers the most the runner was seen to take, a long text spoken."""
    from localllm.daemon.speech.pool import speaker_bytes, speakers
    from tests.support.process_memory import peak_resident_bytes
    from tests.support.speech import SENTENCES

    asked: list[tuple[str, int]] = []

    async def make_room(name: str, needed: int) -> None:
        asked.append((name, needed))

    async def scenario() -> tuple[bool, bool, bool, int]:
        pool = speakers(300.0, make_room=make_room)
        try:
            async with pool.use("voice:joe", joe_voice_path()) as runner:
                async for _ in runner.speak(SpeakRequest(" ".join(SENTENCES))):
                    pass
                peak = peak_resident_bytes(runner.pid)
                held = await pool.release_idle()  # in use: not let go
                alive_while_held = runner.alive
            released = await pool.release_idle()
            return held, alive_while_held and not runner.alive, released, peak
        finally:
            await pool.close()

    held, stopped_after, released, peak = harness.run(scenario())
    estimate = speaker_bytes(joe_voice_path())
    assert asked == [("voice:joe", estimate)]
    assert peak <= estimate < 2 * peak
    assert not held and released and stopped_after


# -- the parts, without a runner -----------------------------------------------------------


def test_frames_round_trip_and_reject_what_they_do_not_know():
    for frame in (SpecOp(SpeakerSpec("/voices/joe")), SpeakOp(3, SpeakRequest("Hi.", 1.5))):
        assert decode_request(encode(frame)) == frame
    chunk = AudioChunk(3, 0, b"\x00\x01\xff\x7f")
    assert encode(chunk)["pcm"] == "AAH/fw==" and decode_event(encode(chunk)) == chunk
    bad = [
        {"op": "speak", "id": 1},  # no request
        {**encode(CancelOp(1)), "extra": 1},  # a field nobody knows
        {"op": "sing", "id": 1},  # a tag nobody knows
        {**encode(SpeakOp(1, SpeakRequest("a"))), "id": True},  # a bool is no id
    ]
    for message in bad:
        with pytest.raises(ProtocolError):
            decode_request(message)
    with pytest.raises(ProtocolError, match="base64"):
        decode_event({**encode(chunk), "pcm": "not base64!"})


def test_pieces_keep_the_text_in_order_and_cut_where_sentences_end():
    text = "First sentence here. " * 40 + "\n\n" + "x" * 1500 + "\n\n \n\n" + "Last."
    parts = list(pieces(text, limit=100))
    assert all(len(part) <= 100 for part in parts)
    assert "".join(parts).replace(" ", "") == text.replace(" ", "").replace("\n", "")
    assert all(part.endswith("here.") for part in parts[:5])  # at a sentence's end
    assert parts[-1] == "Last."
    assert list(pieces("  \n\n  ")) == []


@pytest.mark.parametrize("form", supported_formats())
def test_every_format_decodes_at_the_voices_rate(form):
    """The encoders, fed as the route feeds them (a sentence at a time), write audio PyAV
    reads back whole: the rate the voice speaks at (Opus's 48 kHz for Opus)."""
    rate = JOE_RATE
    tone = (np.sin(np.arange(rate) * 2 * np.pi * 220 / rate) * 8000).astype("<i2").tobytes()
    encoder = encoder_for(form, rate)
    data = encoder.encode(tone) + encoder.encode(tone) + encoder.finish()
    if form == "pcm":
        assert data == tone * 2
        return
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        decoded = sum(frame.samples for frame in container.decode(stream))
    expected = 48_000 if form == "opus" else rate
    assert stream.rate == expected
    assert abs(decoded / expected - 2.0) < 0.1  # two seconds, give or take codec padding
