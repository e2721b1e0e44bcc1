"""``localllm run`` against a real daemon: one answer, piped input, ``--verbose``, and the
interactive chat driven through a pseudo-terminal."""

from __future__ import annotations

import io
import sys

import pexpect
import pytest

from app.cli.main import main
from tests.cli.e2e_support import CLI, cli_env, run_cli
from tests.daemon_support import ROOT, Daemon, make_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from model_registry.importer import ModelExtras

    root = tmp_path_factory.mktemp("cli-run")
    extras = ModelExtras(parameters={"num_predict": 6})
    store = make_store(root / "store", {"tiny": (tiny_model_path, extras)})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture
def env(daemon, tmp_path):
    return cli_env(tmp_path, daemon.port)


def test_one_prompt(env, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    status = main(
        ["run", "tiny", "Hello", "there", "-o", "seed", "1"], {**env, "LOCALLLM_DEBUG": "1"}
    )
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    assert out.strip() and out.endswith("\n")


def test_verbose_reports_timings(env):
    result = run_cli(["run", "tiny", "Hi", "--verbose", "-o", "num_predict", "3"], env)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    labels = [line.split(":")[0] for line in lines]
    assert labels == [
        "total duration", "load duration", "prompt eval count", "prompt eval duration",
        "prompt eval rate", "eval count", "eval duration", "eval rate",
    ]  # fmt: skip
    assert "eval count:           3 token(s)" in lines
    assert lines[-1].endswith("tokens/s")


def test_piped_input_is_the_prompt(env):
    result = run_cli(["run", "tiny", "Summarize:"], env, stdin="a long text\nin two lines\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_json_format(env):
    argv = ["run", "tiny", "A JSON object", "--format", "json", "-o", "num_predict", "40"]
    result = run_cli(argv, env)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_interactive_chat_through_a_terminal(env, tmp_path):
    child = pexpect.spawn(
        CLI[0], [*CLI[1:], "run", "tiny"], env=env, cwd=str(ROOT), encoding="utf-8", timeout=90
    )
    try:
        child.expect_exact(">>> ")
        child.sendline("Hello, who are you?")
        child.expect_exact(">>> ")
        answer = child.before.split("Hello, who are you?", 1)[1]
        assert answer.strip(), "the model wrote nothing"
        child.sendline("/set parameter temperature 0")
        child.expect_exact("Set parameter 'temperature' to '0.0'")
        child.sendline('"""first line')
        child.expect_exact("... ")
        child.sendline('second line"""')
        child.expect_exact(">>> ")
        child.sendline("/show info")
        child.expect_exact("architecture")
        child.expect_exact(">>> ")
        child.sendline("/bye")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "Hello, who are you?" in (tmp_path / "cli-data" / "history").read_text()


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_ctrl_d_leaves_the_chat(env):
    child = pexpect.spawn(
        CLI[0], [*CLI[1:], "run", "tiny"], env=env, cwd=str(ROOT), encoding="utf-8", timeout=90
    )
    try:
        child.expect_exact(">>> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
