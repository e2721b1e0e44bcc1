"""The model commands against a real daemon: list, show, cp, rm, create, ps, stop, and the
one-line errors. ``localllm`` runs in-process (``main(argv, env)``) for speed; it still talks
to the daemon over HTTP exactly as the installed command does."""

from __future__ import annotations

import io
import json
import shutil

import pytest

from localllm.app.cli.main import main
from tests.support.cli import PS_HEADER
from tests.support.cli_e2e import cli_env
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras

    root = tmp_path_factory.mktemp("cli-models")
    extras = ModelExtras(
        system="You are tiny.", parameters={"num_predict": 4}, licenses=("MIT License",)
    )
    store = make_store(root / "store", {"tiny": (tiny_model_path, extras)})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture
def cli(daemon, tmp_path, capsys, monkeypatch):
    env = cli_env(tmp_path, daemon.port, LOCALLLM_DEBUG="1")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv), env)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def names(cli) -> list[str]:
    status, out, _ = cli("list", "--json")
    assert status == 0
    return sorted(model["name"] for model in json.loads(out))


def test_list(cli):
    status, out, err = cli("list")
    header, *rows = out.splitlines()
    assert status == 0 and err == ""
    assert header.split() == ["NAME", "ID", "SIZE", "MODIFIED"]
    assert any(row.startswith("tiny:latest ") and row.endswith(" ago") for row in rows)


def test_show(cli):
    status, out, _ = cli("show", "tiny")
    assert status == 0
    assert "  Model\n    architecture        llama\n" in out
    assert "context length      2048" in out
    assert "  System\n    You are tiny.\n" in out
    assert "  License\n    MIT License\n" in out
    assert "num_predict" in cli("show", "tiny", "--parameters")[1]
    assert cli("show", "tiny", "--system")[1] == "You are tiny.\n"
    assert "FROM " in cli("show", "tiny", "--modelfile")[1]


def test_cp_and_rm(cli):
    assert cli("cp", "tiny", "tiny-copy") == (0, "copied 'tiny' to 'tiny-copy'\n", "")
    assert "tiny-copy:latest" in names(cli)
    assert cli("rm", "tiny-copy") == (0, "deleted 'tiny-copy'\n", "")
    assert "tiny-copy:latest" not in names(cli)
    assert "tiny:latest" in names(cli)  # the shared blobs stayed


def test_create_from_a_gguf_file_uploads_it(cli, tmp_path, tiny_q8_model_path):
    shutil.copy(tiny_q8_model_path, tmp_path / "weights.gguf")
    (tmp_path / "Modelfile").write_text(
        'FROM ./weights.gguf\nPARAMETER temperature 0.1\nSYSTEM """Answer briefly."""\n'
    )
    status, _, err = cli("create", "made-here", "-f", str(tmp_path / "Modelfile"))
    assert status == 0, err
    assert "copying weights.gguf" in err and err.rstrip().endswith("success")
    assert "made-here:latest" in names(cli)
    assert cli("show", "made-here", "--system")[1] == "Answer briefly.\n"
    status, _, err = cli("create", "made-again", "-f", str(tmp_path / "Modelfile"))
    assert status == 0 and "copying weights.gguf" not in err  # the daemon had the blob
    cli("rm", "made-here", "made-again")


def test_create_from_a_model_in_the_store(cli, tmp_path):
    (tmp_path / "Modelfile").write_text("FROM tiny\nSYSTEM You are a pirate.\n")
    assert cli("create", "pirate", "-f", str(tmp_path / "Modelfile"))[0] == 0
    assert cli("show", "pirate", "--system")[1] == "You are a pirate.\n"
    cli("rm", "pirate")


def test_create_with_quantize(cli, tmp_path, tiny_model_path):
    shutil.copy(tiny_model_path, tmp_path / "f16.gguf")
    (tmp_path / "Modelfile").write_text("FROM ./f16.gguf\n")
    status, _, err = cli("create", "tiny-q8", "-f", str(tmp_path / "Modelfile"), "-q", "q8_0")
    assert status == 0, err
    assert "quantization        Q8_0" in cli("show", "tiny-q8")[1]
    cli("rm", "tiny-q8")


def test_ps_and_stop(cli):
    assert cli("run", "tiny", "Hello")[0] == 0
    status, out, _ = cli("ps")
    header, *rows = out.splitlines()
    assert header.split() == PS_HEADER
    assert any(row.startswith("tiny:latest ") and "from now" in row for row in rows)
    assert cli("stop", "tiny")[0] == 0
    assert all(not row.startswith("tiny:latest") for row in cli("ps")[1].splitlines()[1:])
    status, _, err = cli("stop", "tiny")
    assert status == 1 and err.startswith("Error: model 'tiny' is not running")


@pytest.mark.parametrize(
    "argv",
    [["show", "no-such-model"], ["rm", "no-such-model"], ["cp", "no-such-model", "other"]],
)
def test_unknown_model_is_one_line_and_fails(cli, argv):
    status, out, err = cli(*argv)
    assert status == 1 and out == ""
    assert err.startswith("Error: ") and err.count("\n") == 1
    assert "no-such-model" in err and "Traceback" not in err


def test_prune_and_verify(cli):
    status, out, _ = cli("prune")
    assert status == 0 and out.strip()
    status, out, _ = cli("verify")
    assert status == 0 and "no problems" in out
