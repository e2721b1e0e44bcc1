"""``localllm say`` against a real daemon with the real Piper voice, added by ``localllm import``
from its two files: speech into a file of the format its suffix names, into a pipe, or (on a
terminal) into ``speech.wav`` here; ``list`` and ``show`` tell the voice; what cannot be said
is an error that says so. ``localllm`` runs in-process (``main(argv, env)``) and talks to the
daemon over HTTP as the installed command does."""

from __future__ import annotations

import io
import os
import struct
import wave

import av
import pytest

from localllm.app.cli.main import main
from localllm.model_registry.store import Store
from localllm.model_registry.transcription import import_whisper_folder
from tests.support.cli_e2e import cli_env
from tests.support.daemon import Daemon, make_store
from tests.support.real_voice import JOE_RATE, joe_voice_path
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import word_error_rate

pytestmark = pytest.mark.slow

SENTENCE = "The children are playing football in the garden after school."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-say")
    store = make_store(root / "store", {})
    import_whisper_folder(Store(store), "whisper:base", whisper_base_path())
    with Daemon(store, root / "logs") as running:
        env = cli_env(root, running.port)
        files = [
            str(joe_voice_path() / f"en_US-joe-medium{end}") for end in (".onnx", ".onnx.json")
        ]
        assert main(["import", *files, "voice:joe"], env) == 0
        yield running


@pytest.fixture
def cli(daemon, tmp_path, capsysbinary, monkeypatch):
    """``cli("say", ...)``: (status, stdout bytes, stderr text)."""
    env = cli_env(tmp_path, daemon.port)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    def run(*argv: str) -> tuple[int, bytes, str]:
        status = main(list(argv), env)
        captured = capsysbinary.readouterr()
        return status, captured.out, captured.err.decode()

    return run


def test_the_voice_is_listed_and_shown_as_one(cli):
    status, out, _ = cli("list")
    assert status == 0 and b"voice:joe" in out
    status, out, _ = cli("show", "voice:joe")
    assert status == 0 and b"piper" in out and b"speech" in out


def test_say_writes_a_wav_whose_header_gives_its_size(cli, tmp_path):
    target = tmp_path / "hello.wav"
    status, _, err = cli("say", SENTENCE, "-o", str(target))
    assert status == 0 and f"wrote {target} (" in err and "s of speech)" in err
    with wave.open(str(target)) as audio:  # the standard library reads it: real sizes
        assert audio.getframerate() == JOE_RATE and audio.getsampwidth() == 2
        assert audio.getnframes() == (target.stat().st_size - 44) // 2 > JOE_RATE


def test_the_suffix_picks_the_format(cli, tmp_path):
    for name, codec in (("hello.mp3", "mp3"), ("hello.flac", "flac"), ("hello.ogg", "opus")):
        status, _, err = cli("say", "Hello there.", "-o", str(tmp_path / name))
        assert status == 0 and f"bytes of {codec}" in err
        with av.open(str(tmp_path / name)) as container:
            assert container.streams.audio[0].codec_context.name.startswith(codec[:3])


def test_into_a_pipe_the_speech_is_heard_by_whisper(cli, tmp_path):
    status, out, _ = cli("say", SENTENCE)  # stdout is captured: no terminal
    assert status == 0 and out[:4] == b"RIFF" and struct.unpack("<I", out[4:8])[0] == len(out) - 8
    spoken = tmp_path / "piped.wav"
    spoken.write_bytes(out)
    status, heard, _ = cli("transcribe", str(spoken))
    assert status == 0 and word_error_rate(SENTENCE, heard.decode()) < 0.15, heard


def test_text_from_stdin_and_at_a_slower_speed(cli, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello there.\n"))
    status, normal, _ = cli("say")
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello there.\n"))
    status_slow, slow, _ = cli("say", "--speed", "0.5")
    assert status == status_slow == 0 and len(slow) > 1.5 * len(normal)


def test_on_a_terminal_it_writes_speech_wav_here_and_says_so(cli, tmp_path, monkeypatch):
    leader, follower = os.openpty()
    monkeypatch.chdir(tmp_path)
    # a real terminal as stdout: what a person at a shell has
    with open(follower, "w") as terminal:
        monkeypatch.setattr("sys.stdout", terminal)
        status, _, err = cli("say", "Hello there.")
    os.close(leader)
    assert status == 0 and "wrote speech.wav (" in err
    with wave.open(str(tmp_path / "speech.wav")) as audio:
        assert audio.getframerate() == JOE_RATE


def test_what_cannot_be_said_is_an_error(cli):
    status, _, err = cli("say", "  ")
    assert status != 0 and "nothing to say" in err
    status, _, err = cli("say", "Hello.", "--voice", "voice:nobody")
    assert status != 0 and "not a voice of the store" in err
    status, _, err = cli("say", "Hello.", "--speed", "9")
    assert status != 0 and "between 0.25 and 4" in err
    status, _, err = cli("say", "Hello.", "--voice", "whisper:base")
    assert status != 0 and "whisper:base is not a voice" in err
