"""OpenAI's speech API on the real daemon: the real Piper voice (``voice:joe``) and Whisper
base imported into the store, asked by the official ``openai`` SDK's ``audio.speech.create``
(whole and streamed, every format PyAV encodes, OpenAI's SSE events); the round trip: speech
made by ``/v1/audio/speech`` comes back through ``/v1/audio/transcriptions`` as the same words;
bad requests get a status and a message that says what to change."""

from __future__ import annotations

import base64
import io
import json

import av
import httpx
import pytest

from localllm.daemon.speech.encoding import supported_formats
from localllm.model_registry.store import Store
from localllm.model_registry.transcription import import_whisper_folder
from localllm.model_registry.voice import import_voice
from tests.support.daemon import Daemon, make_store
from tests.support.real_voice import JOE_RATE, joe_voice_path
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import word_error_rate

pytestmark = pytest.mark.slow

SENTENCE = "Please open the window and let some fresh air into the room."
PARAGRAPH = (
    "The weather is very nice today, so we will go for a walk in the park. "
    "My brother bought a new car last week, and he drives it to work every morning."
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("speech-api")
    store_dir = make_store(root / "models", {"tiny": tiny_model_path})
    import_voice(Store(store_dir), "voice:joe", joe_voice_path())
    import_whisper_folder(Store(store_dir), "whisper:base", whisper_base_path())
    with Daemon(store_dir, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return daemon.openai(timeout=300)


def decoded(audio: bytes) -> tuple[int, float]:
    """The sample rate of ``audio``'s first stream and its length in seconds, as PyAV reads it."""
    with av.open(io.BytesIO(audio)) as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
    return stream.rate, samples / stream.rate


def test_the_sdk_gets_speech_pyav_decodes_at_the_voices_rate(client):
    answer = client.audio.speech.create(model="voice:joe", voice="alloy", input=SENTENCE)
    rate, seconds = decoded(answer.content)  # mp3, OpenAI's default
    assert rate == JOE_RATE and 2.0 < seconds < 10.0, seconds
    assert answer.response.headers["content-type"] == "audio/mpeg"
    assert answer.response.headers["x-sample-rate"] == str(JOE_RATE)


def test_the_streaming_response_brings_the_same_audio_in_pieces(client):
    with client.audio.speech.with_streaming_response.create(
        model="voice:joe", voice="alloy", input=PARAGRAPH, response_format="wav"
    ) as response:
        pieces = list(response.iter_bytes())
    audio = b"".join(pieces)
    assert audio[:4] == b"RIFF" and audio[4:8] == b"\xff\xff\xff\xff"  # sizes: unknown
    rate, seconds = decoded(audio)
    assert rate == JOE_RATE and seconds > 5.0
    assert (len(audio) - 44) / 2 / JOE_RATE == pytest.approx(seconds)


def test_speech_comes_back_through_whisper_as_the_same_words(client, daemon):
    """The round trip: the daemon's voice speaks, the daemon's Whisper hears."""
    spoken = client.audio.speech.create(
        model="voice:joe", voice="alloy", input=PARAGRAPH, response_format="wav"
    ).content
    heard = client.audio.transcriptions.create(
        model="whisper:base", file=("speech.wav", spoken, "audio/wav")
    )
    assert word_error_rate(PARAGRAPH, heard.text) < 0.15, heard.text


@pytest.mark.parametrize("form", supported_formats())
def test_every_format_the_daemon_names_decodes(client, form):
    answer = client.audio.speech.create(
        model="voice:joe", voice="alloy", input="Good morning.", response_format=form
    )
    if form == "pcm":  # no header: 16-bit samples at the rate the header names
        assert answer.response.headers["x-sample-rate"] == str(JOE_RATE)
        assert 0.3 < len(answer.content) / 2 / JOE_RATE < 5.0
        return
    rate, seconds = decoded(answer.content)
    assert rate == (48_000 if form == "opus" else JOE_RATE) and 0.3 < seconds < 5.0


def test_speed_shortens_the_speech(client):
    def seconds(speed: float) -> float:
        answer = client.audio.speech.create(
            model="voice:joe", voice="alloy", input=PARAGRAPH, response_format="wav", speed=speed
        )
        return decoded(answer.content)[1]

    assert seconds(2.0) * 1.5 < seconds(1.0)


def test_a_client_written_for_openai_names_the_voice_as_voice(client):
    """``model="tts-1"`` is no model of the store: ``voice`` names the stored voice."""
    answer = client.audio.speech.create(model="tts-1", voice="joe", input="Hello.")
    assert decoded(answer.content)[0] == JOE_RATE
    with pytest.raises(Exception, match="not a voice of the store") as caught:
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hello.")
    assert getattr(caught.value, "status_code", None) == 404


def test_openais_sse_events_carry_the_audio_in_base64(daemon):
    body = {"model": "voice:joe", "input": SENTENCE, "response_format": "pcm"}
    body["stream_format"] = "sse"
    answer = httpx.post(f"{daemon.url}/v1/audio/speech", json=body, timeout=120)
    events = [
        json.loads(line.removeprefix("data: "))
        for line in answer.text.splitlines()
        if line.startswith("data: ")
    ]
    *deltas, done = events
    assert deltas and {event["type"] for event in deltas} == {"speech.audio.delta"}
    assert done["type"] == "speech.audio.done" and "usage" in done
    pcm = b"".join(base64.b64decode(event["audio"]) for event in deltas)
    assert 2.0 < len(pcm) / 2 / JOE_RATE < 10.0


def test_show_and_list_tell_a_voice(daemon):
    show = httpx.post(f"{daemon.url}/api/show", json={"model": "voice:joe"}, timeout=30).json()
    assert show["capabilities"] == ["speech"]
    assert (show["details"]["family"], show["details"]["format"]) == ("piper", "onnx")
    assert show["model_info"]["piper.sample_rate"] == JOE_RATE
    assert show["model_info"]["piper.language"] == "en_US"
    listed = httpx.get(f"{daemon.url}/api/tags", timeout=30).json()["models"]
    (joe,) = [model for model in listed if model["name"] == "voice:joe"]
    assert joe["details"]["family"] == "piper" and joe["size"] > 60 << 20


def _speech(daemon, **fields: object) -> httpx.Response:
    body = {"model": "voice:joe", "input": "Hello.", **fields}
    return httpx.post(f"{daemon.url}/v1/audio/speech", json=body, timeout=120)


def test_bad_requests_say_what_to_change(daemon, tmp_path):
    from localllm.daemon.server.openai.speech import MAX_INPUT_CHARACTERS

    chat = {"model": "voice:joe", "messages": [{"role": "user", "content": "hi"}]}
    cases = [
        (_speech(daemon, input="  "), 400, "input is empty"),
        (_speech(daemon, input="a" * (MAX_INPUT_CHARACTERS + 1)), 400, "at most 100,000"),
        (_speech(daemon, speed=5), 400, "between 0.25 and 4"),
        (_speech(daemon, response_format="ogg"), 400, "wav, pcm, mp3, opus, flac, aac"),
        (_speech(daemon, stream_format="srt"), 400, "stream_format"),
        (_speech(daemon, model="tiny"), 400, "tiny is not a voice"),
        (_speech(daemon, model="missing:voice"), 404, "not a voice of the store"),
        (httpx.post(f"{daemon.url}/v1/audio/speech", json={"input": "x"}), 400, "model"),
        (httpx.post(f"{daemon.url}/v1/chat/completions", json=chat, timeout=30), 400,
         "voice:joe is a voice"),
        (httpx.post(f"{daemon.url}/v1/audio/transcriptions", data={"model": "voice:joe"},
                    files={"file": ("a.wav", b"RIFF....")}, timeout=30), 400,
         "voice:joe is not a transcription model"),
    ]  # fmt: skip
    for answer, status, says in cases:
        assert answer.status_code == status, answer.text
        assert says in answer.json()["error"]["message"], answer.text
        assert str(tmp_path) not in answer.text and "/tmp/" not in answer.text


def test_rm_stops_the_voices_runner_and_deletes_it(tmp_path):
    store_dir = make_store(tmp_path / "models", {})
    import_voice(Store(store_dir), "voice:joe", joe_voice_path())
    with Daemon(store_dir, tmp_path / "logs") as daemon:
        assert _speech(daemon).status_code == 200
        assert daemon.runner_pids()  # the speaker
        answer = httpx.request(
            "DELETE", f"{daemon.url}/api/delete", json={"model": "voice:joe"}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        assert not daemon.runner_pids()
        assert _speech(daemon).status_code == 404


def test_ps_lists_the_voice_and_stop_and_load_work_as_for_any_model(client, daemon):
    client.audio.speech.create(model="voice:joe", voice="alloy", input="Hello there.").read()

    def listed() -> list[dict]:
        return httpx.get(f"{daemon.url}/api/ps", timeout=30).json()["models"]

    (row,) = [m for m in listed() if m["name"] == "voice:joe"]
    assert row["details"]["family"] == "piper" and row["size"] > 0
    stop = {"model": "voice:joe", "keep_alive": 0}  # what `localllm stop voice:joe` sends
    answer = httpx.post(f"{daemon.url}/api/generate", json=stop, timeout=60).json()
    assert answer["done_reason"] == "unload"
    assert not [m for m in listed() if m["name"] == "voice:joe"]
    load = httpx.post(f"{daemon.url}/api/generate", json={"model": "voice:joe"}, timeout=120)
    assert load.json()["done_reason"] == "load"
    assert [m for m in listed() if m["name"] == "voice:joe"]
