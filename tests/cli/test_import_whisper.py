"""A Whisper model folder through the whole path: ``localllm import FOLDER [NAME]`` (the real
CLI and client, the daemon's app served in a thread) links it into the store; ``list`` and
``show`` say what it is; ``cp``, ``rm``, ``verify`` and ``prune`` work on it as on any model;
and every route that needs a GGUF answers a clear 400 instead of failing to load it."""

from __future__ import annotations

import io
import json
import os

import httpx
import pytest

from localllm.app.cli.main import main
from localllm.daemon.client import Client
from localllm.model_registry.store import Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import make_store
from tests.support.in_process import serve_daemon_in_thread
from tests.test_transcription_store import FAKE_PARAMETERS, write_fake_whisper

REFUSAL = "whisper:base is a transcription model; use /v1/audio/transcriptions"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("import-whisper")


@pytest.fixture(scope="module")
def url(root):
    tiny = write_tiny_model(root / "tiny.gguf", seed=7)
    store = make_store(root / "store", {"tiny": tiny})
    with serve_daemon_in_thread(root, store) as url:
        yield url


@pytest.fixture
def cli(url, cli_env, capsys, monkeypatch):
    """``cli("list")`` runs ``localllm list`` against the daemon: (status, out, err)."""

    def run(*argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        status = main(list(argv), cli_env, client_factory=lambda settings: Client(url))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture(scope="module")
def imported(root, url):
    """``whisper:base`` added by ``localllm import FOLDER`` (once for the module)."""
    folder = write_fake_whisper(root / "faster-whisper-base")
    env = {"LOCALLLM_DATA": str(root / "data"), "LOCALLLM_CONFIG": str(root / "config")}
    status = main(["import", str(folder)], env, client_factory=lambda settings: Client(url))
    assert status == 0
    return folder


def test_import_links_the_folder_and_names_it_after_the_repository(root, imported, cli):
    store = Store(root / "store")
    manifest = store.read_manifest("whisper:base")
    model_bin = next(x for x in manifest.layers if x.file_name == "model.bin")
    assert os.path.samefile(store.blobs.path(model_bin.digest), imported / "model.bin")
    status, out, _ = cli("list")
    assert status == 0 and "whisper:base" in out


def test_import_folder_name_takes_the_name_and_says_how_each_file_went(root, cli):
    folder = write_fake_whisper(root / "other", seed=1)
    status, out, err = cli("import", str(folder), "whisper:mine")
    assert status == 0, err
    assert "added whisper:mine" in out
    assert "linked model.bin" in err  # its own weights; the small files are shared blobs:
    assert "tokenizer.json (" in err and "B) was already in the store" in err


def test_a_folder_that_is_no_model_is_one_line_saying_what_is_missing(root, cli):
    folder = write_fake_whisper(root / "broken")
    (folder / "tokenizer.json").unlink()
    status, _, err = cli("import", str(folder))
    assert status == 1
    assert "broken is not a Whisper model in CTranslate2 form: it has no tokenizer.json" in err
    assert len(err.strip().splitlines()) == 1 and str(root) not in err


def test_list_and_show_say_it_is_a_whisper_model(imported, cli):
    status, out, _ = cli("list", "--json")
    [listed] = [m for m in json.loads(out) if m["name"] == "whisper:base"]
    details = listed["details"]
    assert (details["family"], details["format"]) == ("whisper", "ct2")
    assert (details["parameter_size"], details["quantization_level"]) == ("640", "F16")
    assert listed["size"] > sum(f.stat().st_size for f in imported.iterdir())  # and its config
    status, out, err = cli("show", "whisper:base")
    assert status == 0, err
    assert "transcription" in out and "whisper" in out and "F16" in out
    status, out, _ = cli("show", "whisper:base", "--json")
    shown = json.loads(out)
    assert shown["capabilities"] == ["transcription"]
    assert shown["model_info"]["general.parameter_count"] == FAKE_PARAMETERS
    status, out, _ = cli("show", "tiny", "--json")
    assert "completion" in json.loads(out)["capabilities"]  # a GGUF's as before


def test_run_on_it_is_refused_in_one_clear_line(imported, cli):
    status, _, err = cli("run", "whisper:base", "hello")
    assert status == 1 and REFUSAL in err


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/generate", {"model": "whisper:base", "prompt": "hi"}),
        ("/api/chat", {"model": "whisper:base", "messages": [{"role": "user", "content": "hi"}]}),
        ("/api/embed", {"model": "whisper:base", "input": "hi"}),
        ("/v1/chat/completions", {"model": "whisper:base", "messages": [{"role": "user"}]}),
        ("/api/plan", {"model": "whisper:base"}),
    ],
)
def test_routes_that_need_a_gguf_answer_400(imported, url, path, body):
    if path == "/v1/chat/completions":
        body["messages"][0]["content"] = "hi"
    answer = httpx.post(url + path, json=body, timeout=30)
    assert answer.status_code == 400, answer.text
    assert REFUSAL in answer.text


def test_cp_rm_verify_and_prune_work_on_it(root, imported, cli):
    assert cli("cp", "whisper:base", "whisper:copy")[0] == 0
    status, out, err = cli("verify")
    assert status == 0, err
    store = Store(root / "store")
    folder = store.model_folder("whisper:copy")
    assert store.model_folder("whisper:base") == folder  # one folder for both names
    status, out, err = cli("rm", "whisper:copy")
    assert status == 0, err
    assert folder.is_dir()  # whisper:base still uses it
    assert cli("prune")[0] == 0
    assert store.model_folder("whisper:base") == folder
    assert cli("rm", "whisper:mine")[0] == 0
    status, out, _ = cli("list")
    assert "whisper:copy" not in out and "whisper:mine" not in out
