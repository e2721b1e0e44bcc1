"""``localllm run`` against a real daemon: one answer, piped input, ``--verbose``, images
for a model with a vision projector, and the interactive chat driven through a
pseudo-terminal."""

from __future__ import annotations

import io
import re
import sys

import pexpect
import pytest

from localllm.app.cli.main import main
from tests.support.cli_e2e import CLI, cli_env, run_cli
from tests.support.daemon import ROOT, Daemon, make_store
from tests.support.model_writers.projector import TINY_IMAGE_TOKENS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras, import_gguf
    from localllm.model_registry.store import Store
    from tests.support.model_writers.projector import write_tiny_projector

    root = tmp_path_factory.mktemp("cli-run")
    extras = ModelExtras(parameters={"num_predict": 6})
    store = make_store(root / "store", {"tiny": (tiny_model_path, extras)})
    projector = write_tiny_projector(root / "mmproj.gguf")
    import_gguf(Store(store), "seer", tiny_model_path, projector=projector, extras=extras)
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


def write_image(path):
    from PIL import Image

    Image.new("RGB", (40, 30), "orange").save(path, "PNG")
    return path


def prompt_tokens(stderr: str) -> int:
    """The prompt eval count ``--verbose`` reports (the last one printed)."""
    return int(re.findall(r"prompt eval count:\s+(\d+) token", stderr)[-1])


def test_a_image_in_the_prompt_is_sent(env, tmp_path):
    write_image(tmp_path / "x.png")
    ask = ["--verbose", "-o", "seed", "1", "-o", "num_predict", "3"]
    seen = run_cli(["run", "seer", "what is this ./x.png", *ask], env, cwd=tmp_path)
    assert seen.returncode == 0, seen.stderr
    assert seen.stderr.splitlines()[0] == "Added image './x.png'"
    assert seen.stdout.strip(), "the model wrote nothing"
    words = run_cli(["run", "seer", "what is this", *ask], env, cwd=tmp_path)
    assert words.returncode == 0, words.stderr
    assert "Added image" not in words.stderr
    assert prompt_tokens(seen.stderr) - prompt_tokens(words.stderr) >= TINY_IMAGE_TOKENS


def test_a_model_without_a_projector_keeps_the_path_as_text(env, tmp_path):
    write_image(tmp_path / "x.png")
    ask = ["--verbose", "-o", "num_predict", "3"]
    with_path = run_cli(["run", "tiny", "what is this ./x.png", *ask], env, cwd=tmp_path)
    assert with_path.returncode == 0, with_path.stderr  # an image would be refused (400)
    assert "Added image" not in with_path.stderr
    without = run_cli(["run", "tiny", "what is this", *ask], env, cwd=tmp_path)
    assert 0 < prompt_tokens(with_path.stderr) - prompt_tokens(without.stderr) < TINY_IMAGE_TOKENS


def test_a_file_that_is_not_a_image_is_not_sent(env, tmp_path):
    (tmp_path / "notes.png").write_text("just text")
    result = run_cli(["run", "seer", "what is ./notes.png"], env, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: cannot read image './notes.png': it is not a PNG")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_images_in_the_interactive_chat(env, tmp_path):
    """Two turns with an image in the first, then the same two turns without it: each turn
    with the image counts its tokens more, the second too (the image is sent again)."""
    write_image(tmp_path / "my image.png")
    child = pexpect.spawn(
        CLI[0],
        [*CLI[1:], "run", "seer"],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=90,
    )

    def counted() -> int:
        child.expect(r"prompt eval count:\s+(\d+) token")
        count = int(child.match.group(1))
        child.expect_exact(">>> ")
        return count

    def turn(line: str) -> int:
        child.sendline(line)
        return counted()

    try:
        child.expect_exact(">>> ")
        for line in ("/set verbose", "/set parameter num_predict 1"):  # one-token answers
            child.sendline(line)
            child.expect_exact(">>> ")
        child.sendline("what is in 'my image.png'?")
        child.expect_exact("Added image 'my image.png'")
        with_image = [counted(), turn("and now?")]
        child.sendline("/clear")
        child.expect_exact(">>> ")
        words_only = [turn("what is in?"), turn("and now?")]
        child.sendline("/bye")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert with_image[0] - words_only[0] >= TINY_IMAGE_TOKENS
    assert with_image[1] - words_only[1] >= TINY_IMAGE_TOKENS - 2  # the answers may differ


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
