"""The interactive chat on a real pseudo-terminal (readline, prompts, Ctrl-C, Ctrl-D), with a
stand-in client so it runs without a daemon. ``test_e2e_run.py`` does the same end to end."""

from __future__ import annotations

import sys

import pexpect
import pytest

from tests.support.daemon import ROOT
from tests.support.interrupt import default_sigint

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

SCRIPT = """
import sys, time
from localllm.app.cli.main import main
from tests.support.cli import FakeClient, answer_chunks, text_chunk

class SlowClient(FakeClient):
    def chat(self, model, messages, options=None, keep_alive=None, format=None, tools=None,
             stream=True, think=None):
        last = messages[-1]["content"]
        if last == "slow":
            yield text_chunk("thinking...")
            time.sleep(60)
        yield from answer_chunks("You said: ", last)

sys.exit(main(["run", "tiny", *sys.argv[1:]], client_factory=lambda settings: SlowClient()))
"""


@pytest.fixture
def spawn(tmp_path):
    children = []

    def start(*args: str) -> pexpect.spawn:
        env = {
            "LOCALLLM_DATA": str(tmp_path),
            "PYTHONPATH": str(ROOT),
            "TERM": "xterm",
            "PATH": "/usr/bin:/bin",
        }
        child = pexpect.spawn(
            sys.executable,
            ["-c", SCRIPT, *args],
            env=env,
            cwd=str(ROOT),
            encoding="utf-8",
            timeout=30,
            preexec_fn=default_sigint,
        )
        children.append(child)
        return child

    yield start
    for child in children:
        child.close(force=True)


def test_prompt_answer_and_bye(spawn, tmp_path):
    child = spawn()
    child.expect_exact(">>> ")
    child.sendline("hello")
    child.expect_exact("You said: hello")
    child.expect_exact(">>> ")
    child.sendline('"""two')
    child.expect_exact("... ")
    child.sendline('lines"""')
    child.expect_exact("You said: two\r\nlines")
    child.expect_exact(">>> ")
    child.sendline("/bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "hello" in (tmp_path / "history").read_text()


def test_ctrl_c_stops_an_answer_and_ctrl_d_leaves(spawn):
    child = spawn("--verbose")
    child.expect_exact(">>> ")
    child.sendline("slow")
    child.expect_exact("thinking...")
    child.sendintr()
    child.expect_exact(">>> ")
    child.sendintr()
    child.expect_exact("Use Ctrl + d or /bye to exit.")
    child.expect_exact(">>> ")
    child.sendline("after")
    child.expect_exact("You said: after")
    child.expect_exact("eval rate:")
    child.expect_exact(">>> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
