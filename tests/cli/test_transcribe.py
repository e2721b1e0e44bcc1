"""``localllm transcribe`` against a real daemon with Whisper base (the real-model tier):
speech that espeak-ng wrote comes back as text (streamed), subtitles and JSON with word
times, German in English with --translate; a file that is not there, or not audio, is an
error that says so. ``localllm`` runs in-process (``main(argv, env)``) and talks to the daemon
over HTTP as the installed command does."""

from __future__ import annotations

import io
import json
import re
import wave

import pytest

from localllm.app.cli.main import main
from localllm.model_registry.store import Store
from localllm.model_registry.transcription import import_whisper_folder
from tests.support.cli_e2e import cli_env
from tests.support.daemon import Daemon, make_store
from tests.support.real_whisper import whisper_base_path
from tests.support.speech import speak, word_error_rate

pytestmark = pytest.mark.slow

SENTENCE = "The children are playing football in the garden after school."
LONGER = "My brother bought a new car last week and he drives it to work every morning."
GERMAN = "Guten Morgen, ich trinke jeden Tag einen Kaffee mit Milch."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-transcribe")
    store = make_store(root / "store", {})
    import_whisper_folder(Store(store), "whisper:base", whisper_base_path())
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def audio(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spoken")
    return {
        "english": speak(SENTENCE, folder / "english.wav"),
        "german": speak(GERMAN, folder / "german.wav", voice="de"),
        "long": speak(" ".join([SENTENCE, LONGER, SENTENCE]), folder / "long.wav"),
    }


@pytest.fixture
def cli(daemon, tmp_path, capsys, monkeypatch):
    env = cli_env(tmp_path, daemon.port)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv), env)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def test_text_is_printed_as_it_is_heard(cli, audio):
    status, out, _ = cli("transcribe", str(audio["english"]))
    assert status == 0 and word_error_rate(SENTENCE, out) < 0.15, out


def test_subtitles_and_json_with_word_times(cli, audio):
    status, srt, err = cli("transcribe", str(audio["english"]), "--format", "srt")
    assert status == 0 and srt.startswith("1\n00:00:00,") and "transcribing english.wav" in err
    status, out, _ = cli("transcribe", str(audio["english"]), "--format", "json")
    answer = json.loads(out)
    assert answer["language"] == "en" and word_error_rate(SENTENCE, answer["text"]) < 0.15
    assert [w["start"] for w in answer["words"]] == sorted(w["start"] for w in answer["words"])


class Terminal(io.StringIO):
    """A terminal's stderr as `transcribe` sees it."""

    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_how_far_a_file_has_been_read(daemon, audio, tmp_path, monkeypatch):
    terminal, out = Terminal(), io.StringIO()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr("sys.stdout", out)
    status = main(
        ["transcribe", str(audio["long"]), "--format", "vtt"], cli_env(tmp_path, daemon.port)
    )
    shown = terminal.getvalue()
    assert status == 0 and out.getvalue().startswith("WEBVTT")
    lines = re.findall(
        r"\r\033\[Ktranscribing long\.wav: (\d+:\d\d) of (\d+:\d\d) \((\d+)%\)", shown
    )
    with wave.open(str(audio["long"]), "rb") as recording:
        length = int(recording.getnframes() / recording.getframerate())
    assert len(lines) >= 2 and {total for _, total, _ in lines} == {f"0:{length:02d}"}
    shares = [int(share) for _, _, share in lines]
    assert shares == sorted(shares) and shares[0] < 50 and shares[-1] >= 90
    assert shown.endswith("\r\033[K")  # the line is cleared before the subtitles come


def test_translate_writes_german_speech_in_english(cli, audio):
    status, out, _ = cli("transcribe", str(audio["german"]), "--translate")
    assert status == 0 and "morning" in out.lower(), out


def test_several_files_one_after_another(cli, audio):
    status, out, err = cli("transcribe", str(audio["english"]), str(audio["english"]))
    assert status == 0 and err.count("== english.wav") == 2
    assert out.lower().count("football") == 2


def test_a_missing_file_or_one_that_is_not_audio_is_an_error(cli, tmp_path):
    status, _, err = cli("transcribe", str(tmp_path / "nowhere.wav"))
    assert status != 0 and "nowhere.wav: no such file" in err
    notes = tmp_path / "notes.mp3"
    notes.write_text("these are my notes, not a recording\n" * 40)
    status, _, err = cli("transcribe", str(notes))
    assert status != 0 and "audio" in err, err
