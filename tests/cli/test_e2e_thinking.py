"""``localllm run`` with a thinking model, against the real daemon: the thinking printed apart
(grey on a terminal, on stderr through a pipe) or hidden, the answer alone on stdout, and the
``/set think`` commands in the interactive chat through a pseudo-terminal.

The test model thinks as Qwen3 does but never ends its thinking by itself: ``think_budget``
ends it, so every run here thinks a few tokens and then answers.
"""

from __future__ import annotations

import sys

import ollama
import pexpect
import pytest

from localllm.app.cli.thinking_output import BOLD, GREY, RESET
from tests.support.cli_e2e import CLI, cli_env, run_cli
from tests.support.daemon import ROOT, Daemon, make_store

pytestmark = pytest.mark.slow

BUDGET = {"think_budget": 6, "num_predict": 16, "seed": 3}
OPTIONS = [arg for name, value in BUDGET.items() for arg in ("-o", name, str(value))]
PROMPT = "Is 1009 a prime?"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, thinking_model_path, tiny_model_path):
    root = tmp_path_factory.mktemp("cli-thinking")
    models = {"thinker": thinking_model_path, "tiny": tiny_model_path}
    with Daemon(make_store(root / "store", models), root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def expected(daemon):
    """The same request through the official ``ollama`` package: what the CLI must show."""
    reply = ollama.Client(host=daemon.url).chat(
        "thinker", messages=[{"role": "user", "content": PROMPT}], think=True, options=BUDGET
    )
    assert reply.message.thinking and reply.message.content
    return reply.message


@pytest.fixture
def env(daemon, tmp_path):
    return cli_env(tmp_path, daemon.port)


def line(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def test_piped_the_answer_is_alone_on_stdout_and_the_thinking_on_stderr(env, expected):
    result = run_cli(["run", "thinker", "--think", *OPTIONS, PROMPT], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == line(expected.content)
    assert result.stderr == f"Thinking...\n{line(expected.thinking)}...done thinking.\n\n"
    assert expected.thinking not in result.stdout


def test_hidethinking_prints_only_the_answer(env, expected):
    result = run_cli(["run", "thinker", "--hidethinking", *OPTIONS, PROMPT], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == line(expected.content) and result.stderr == ""


def test_nothink_answers_without_thinking(env, expected):
    result = run_cli(["run", "thinker", "--nothink", "-o", "num_predict", "6", PROMPT], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() and result.stderr == ""


def test_think_on_a_model_that_cannot_is_one_clear_error(env):
    result = run_cli(["run", "tiny", "--think=high", "Hi"], env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "Error: model 'tiny' does not support thinking\n"


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_the_interactive_chat_shows_thinking_grey_and_set_think_switches_it(env, expected):
    child = pexpect.spawn(
        CLI[0],
        [*CLI[1:], "run", "thinker", *OPTIONS],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=90,
    )
    opening = f"{GREY}{BOLD}Thinking...\r\n{RESET}{GREY}"
    closing = f"{GREY}{BOLD}...done thinking.\r\n\r\n{RESET}"

    def ask() -> str:
        child.sendline(PROMPT)
        child.expect_exact(">>> ")
        return child.before.split(PROMPT, 1)[1]

    try:
        child.expect_exact(">>> ")
        child.sendline("/set think")
        child.expect_exact("Set 'think' mode.")
        child.expect_exact(">>> ")
        shown = ask()
        assert opening in shown and closing in shown
        thinking, answer = shown.split(opening, 1)[1].split(closing, 1)
        assert thinking.replace("\r\n", "\n") == line(expected.thinking)
        assert answer.replace("\r\n", "\n").strip() == expected.content.strip()
        child.sendline("/set hidethinking")
        child.expect_exact("Set 'hidethinking' mode.")
        child.expect_exact(">>> ")
        hidden = ask()
        assert "Thinking..." not in hidden and expected.thinking not in hidden
        assert hidden.strip()
        child.sendline("/set nothink")
        child.expect_exact("Set 'nothink' mode.")
        child.expect_exact(">>> ")
        child.sendline("/set nohidethinking")
        child.expect_exact(">>> ")
        assert "Thinking..." not in ask()
        child.sendline("/bye")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
