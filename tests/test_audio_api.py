"""OpenAI's audio API on the real daemon: Whisper base (the real-model tier) imported into the
store, sentences spoken by espeak-ng, sent by the official ``openai`` SDK's
``audio.transcriptions.create`` and ``audio.translations.create`` (every response format,
word timestamps, a stream) and by ``curl -F`` as OpenAI's docs write it; bad requests get a
status and a message that says what to change."""

from __future__ import annotations

import json
import socket
import subprocess
import wave
from pathlib import Path

import httpx
import pytest

from localllm.daemon.client import Client
from localllm.daemon.client.transcripts import Heard, TranscriptEnd
from localllm.model_registry.store import Store
from localllm.model_registry.transcription import import_whisper_folder
from tests.support.daemon import Daemon, make_store
from tests.support.polling import wait_for
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import speak, word_error_rate

pytestmark = pytest.mark.slow

SENTENCE = "Please open the window and let some fresh air into the room."
GERMAN = "Guten Morgen, ich trinke jeden Tag einen Kaffee mit Milch."


@pytest.fixture(scope="module")
def spoken(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("speech")
    return {
        "english": speak(SENTENCE, folder / "english.wav"),
        "german": speak(GERMAN, folder / "german.wav", voice="de"),
    }


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("audio-api")
    store_dir = make_store(root / "models", {"tiny": tiny_model_path})
    import_whisper_folder(Store(store_dir), "whisper:base", whisper_base_path())
    with Daemon(store_dir, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return daemon.openai(timeout=300)


def test_the_sdk_transcribes_speech_with_few_word_errors(client, spoken):
    with spoken["english"].open("rb") as audio:
        result = client.audio.transcriptions.create(model="whisper:base", file=audio)
    assert word_error_rate(SENTENCE, result.text) < 0.15, result.text


def test_verbose_json_has_the_language_segments_and_words(client, spoken):
    with spoken["english"].open("rb") as audio:
        result = client.audio.transcriptions.create(
            model="whisper:base",
            file=audio,
            response_format="verbose_json",
            timestamp_granularities=["word", "segment"],
        )
    assert result.language == "en" and 2 < result.duration < 10
    assert result.segments and result.segments[0].start >= 0 and result.segments[0].tokens
    assert word_error_rate(SENTENCE, " ".join(w.word for w in result.words)) < 0.15
    assert all(a.start <= b.start for a, b in zip(result.words, result.words[1:], strict=False))
    assert result.words[-1].end <= result.duration + 0.5


@pytest.mark.parametrize("form", ["text", "srt", "vtt"])
def test_text_and_subtitles(client, spoken, form):
    with spoken["english"].open("rb") as audio:
        answer = client.audio.transcriptions.create(
            model="whisper:base", file=audio, response_format=form
        )
    text = answer if isinstance(answer, str) else answer.text
    if form == "srt":
        assert text.startswith("1\n00:00:0") and " --> " in text and "," in text.splitlines()[1]
    if form == "vtt":
        assert text.startswith("WEBVTT\n\n00:00:0") and "." in text.splitlines()[2]
    spoken_words = " ".join(line for line in text.splitlines() if "-->" not in line)
    assert word_error_rate(SENTENCE, spoken_words.removeprefix("WEBVTT").lstrip("1\n")) < 0.2


def test_german_is_translated_into_english(client, spoken):
    with spoken["german"].open("rb") as audio:
        result = client.audio.translations.create(model="whisper:base", file=audio)
    assert "morning" in result.text.lower() and "guten" not in result.text.lower()


def test_a_stream_sends_deltas_then_the_whole_text(client, spoken):
    with spoken["english"].open("rb") as audio:
        events = list(
            client.audio.transcriptions.create(model="whisper:base", file=audio, stream=True)
        )
    *deltas, done = events
    assert deltas and all(event.type == "transcript.text.delta" for event in deltas)
    assert done.type == "transcript.text.done"
    assert "".join(event.delta for event in deltas).strip() == done.text
    assert word_error_rate(SENTENCE, done.text) < 0.15


def test_a_stream_says_where_it_is_and_ends_with_the_format_asked_for(daemon, spoken):
    """Beyond OpenAI's fields: each delta's place in the recording (for progress) and, for
    subtitles and verbose JSON, the whole answer in the done event (what `transcribe` shows)."""
    with Client(daemon.url) as ours:
        *heard, end = ours.transcription(spoken["english"], "whisper:base", None, False, "srt")
        verbose = list(
            ours.transcription(spoken["english"], "whisper:base", None, False, "verbose_json")
        )
    assert heard and all(isinstance(event, Heard) for event in heard)
    with wave.open(str(spoken["english"]), "rb") as recording:
        seconds = recording.getnframes() / recording.getframerate()
    assert all(event.duration == pytest.approx(seconds, abs=0.01) for event in heard)
    assert [event.start for event in heard] == sorted(event.start for event in heard)
    assert 0 < heard[-1].end <= seconds + 0.5
    assert isinstance(end, TranscriptEnd) and end.document.startswith("1\n00:00:00,")
    assert " --> " in end.document and word_error_rate(SENTENCE, end.text) < 0.15
    answer = json.loads(verbose[-1].document)
    assert answer["language"] == "en" and answer["words"] and answer["text"] == verbose[-1].text


def test_curl_as_openais_docs_write_it(daemon, spoken):
    answer = subprocess.run(
        [
            "curl", "-sS", f"{daemon.url}/v1/audio/transcriptions",
            "-H", "Authorization: Bearer unused",
            "-H", "Content-Type: multipart/form-data",
            "-F", f"file=@{spoken['english']}",
            "-F", "model=whisper:base",
        ],
        capture_output=True, check=True, text=True,
    )  # fmt: skip
    assert word_error_rate(SENTENCE, json.loads(answer.stdout)["text"]) < 0.15


def _post(daemon, files: dict | None = None, **fields: str) -> httpx.Response:
    files = files if files is not None else {"file": ("a.wav", b"RIFF....", "audio/wav")}
    return httpx.post(
        f"{daemon.url}/v1/audio/transcriptions", data=fields, files=files, timeout=120
    )


def test_bad_requests_say_what_to_change(daemon, tmp_path):
    not_audio = {"file": ("notes.wav", b"these are my notes, not a recording\n" * 40)}
    cases = [
        (_post(daemon, not_audio, model="whisper:base"), 400, "audio"),
        (_post(daemon, model="missing:model"), 404, "missing"),
        (_post(daemon, model="tiny"), 400, "not a transcription model"),
        (_post(daemon, {"prompt": (None, "hi")}, model="whisper:base"), 400, "file is required"),
        (_post(daemon, not_audio), 400, "model is required"),
        (_post(daemon, not_audio, model="whisper:base", response_format="doc"), 400, "vtt"),
        (_post(daemon, not_audio, model="whisper:base", temperature="hot"), 400, "number"),
        (httpx.post(f"{daemon.url}/v1/audio/transcriptions", json={"model": "whisper:base"}),
         400, "multipart"),
    ]  # fmt: skip
    for answer, status, says in cases:
        assert answer.status_code == status, answer.text
        assert says in answer.json()["error"]["message"], answer.text
        assert str(tmp_path) not in answer.text and "/tmp/" not in answer.text


def test_a_file_over_the_cap_is_a_413(daemon):
    """Said as soon as the headers declare it: nothing of the body is read."""
    from localllm.daemon.security.body_limit import AUDIO_LIMIT

    head = (
        "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {AUDIO_LIMIT + 1}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as sock:
        sock.sendall(head.encode())
        answer = sock.makefile("rb").read().decode(errors="replace")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert f"{AUDIO_LIMIT:,} bytes" in answer


def _listed(daemon) -> list[dict]:
    return httpx.get(f"{daemon.url}/api/ps", timeout=30).json()["models"]


def test_ps_lists_the_runner_and_stop_and_load_work_as_for_any_model(client, daemon, spoken):
    with spoken["english"].open("rb") as audio:
        client.audio.transcriptions.create(model="whisper:base", file=audio)
    (row,) = [m for m in _listed(daemon) if m["name"] == "whisper:base"]
    assert row["details"]["family"] == "whisper" and row["details"]["format"] == "ct2"
    assert row["size"] > 50 << 20 and row["processor"] == "100% CPU"
    runners = len(daemon.runner_pids())
    stop = {"model": "whisper:base", "keep_alive": 0}  # what `localllm stop whisper:base` sends
    answer = httpx.post(f"{daemon.url}/api/generate", json=stop, timeout=60).json()
    assert answer["done_reason"] == "unload"
    assert not [m for m in _listed(daemon) if m["name"] == "whisper:base"]
    assert len(daemon.runner_pids()) == runners - 1
    load = httpx.post(f"{daemon.url}/api/generate", json={"model": "whisper:base"}, timeout=120)
    assert load.json()["done_reason"] == "load"
    assert [m for m in _listed(daemon) if m["name"] == "whisper:base"]


def test_a_runner_goes_when_its_keep_alive_ends(tmp_path, spoken):
    store_dir = make_store(tmp_path / "models", {})
    import_whisper_folder(Store(store_dir), "whisper:base", whisper_base_path())
    with Daemon(store_dir, tmp_path / "logs", env={"LOCALLLM_KEEP_ALIVE": "1"}) as daemon:
        with spoken["english"].open("rb") as audio:
            daemon.openai(timeout=300).audio.transcriptions.create(model="whisper:base", file=audio)
        assert wait_for(lambda: not _listed(daemon), 60), _listed(daemon)
        assert wait_for(lambda: not daemon.runner_pids(), 60)


@pytest.fixture(scope="module")
def front(tmp_path_factory, daemon):
    """A daemon with no models of its own, serving this module's daemon as the remote
    ``back``."""
    from tests.support.remotes import add_remote, front_daemon

    with front_daemon(tmp_path_factory.mktemp("front")) as running:
        assert add_remote(running, "back", [daemon.url]).status_code == 200
        yield running


def test_a_remotes_transcription_model_answers_through_the_front(front, spoken):
    client = front.openai(timeout=300)
    assert wait_for(lambda: "back/whisper:base" in [m.id for m in client.models.list().data], 60)
    with spoken["english"].open("rb") as audio:
        result = client.audio.transcriptions.create(
            model="back/whisper:base", file=audio, response_format="verbose_json",
            timestamp_granularities=["word"],
        )  # fmt: skip
    assert result.language == "en" and word_error_rate(SENTENCE, result.text) < 0.15
    assert result.words
    with spoken["english"].open("rb") as audio:
        events = list(
            client.audio.transcriptions.create(model="back/whisper:base", file=audio, stream=True)
        )
    assert events[-1].type == "transcript.text.done"
    assert word_error_rate(SENTENCE, events[-1].text) < 0.15
