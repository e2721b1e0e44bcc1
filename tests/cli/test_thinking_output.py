"""Where and how ``localllm run`` prints a thinking model's reasoning: grey beside the answer on
a terminal, plain on stderr when stdout is a pipe, never in the answer itself."""

from __future__ import annotations

import io
import re

import pytest

from localllm.app.cli.answer import stream_answer
from localllm.app.cli.thinking_output import BOLD, GREY, RESET, ThinkingOutput
from tests.support.cli import answer_chunks, text_chunk, thinking_chunks, thought_chunk

SPINNER = re.compile(r"\r(\S )?(\x1b\[K)?")  # the spinner's frames and its erasing


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def shown(stream: io.StringIO) -> str:
    return SPINNER.sub("", stream.getvalue())


def test_on_a_terminal_the_thinking_is_grey_then_the_answer_plain():
    out, err = Terminal(), io.StringIO()
    chunks = thinking_chunks(["Hmm, ", "7 is odd."], "Yes", ", odd.")
    answer = stream_answer(chunks, out, ThinkingOutput.choose(out, err))
    assert shown(out) == (
        f"{GREY}{BOLD}Thinking...\n{RESET}{GREY}Hmm, 7 is odd.\n"
        f"{GREY}{BOLD}...done thinking.\n\n{RESET}Yes, odd."
    )
    assert (answer.text, answer.thinking, err.getvalue()) == ("Yes, odd.", "Hmm, 7 is odd.", "")


def test_piped_the_answer_is_alone_on_stdout_and_the_thinking_plain_on_stderr():
    out, err = io.StringIO(), io.StringIO()
    chunks = thinking_chunks(["a\n"], "b")
    answer = stream_answer(chunks, out, ThinkingOutput.choose(out, err))
    assert out.getvalue() == "b" and err.getvalue() == "Thinking...\na\n...done thinking.\n\n"
    assert answer.text == "b" and answer.thinking == "a\n"


def test_a_terminal_on_stderr_only_gets_the_grey_thinking():
    out, err = io.StringIO(), Terminal()
    stream_answer(thinking_chunks(["a"], "b"), out, ThinkingOutput.choose(out, err))
    assert err.getvalue().startswith(GREY) and out.getvalue() == "b"


def test_hidden_thinking_prints_nothing_but_is_still_returned():
    out, err = Terminal(), Terminal()
    answer = stream_answer(
        thinking_chunks(["secret"], "shown"), out, ThinkingOutput.choose(out, err, hidden=True)
    )
    assert shown(out) == "shown" and err.getvalue() == ""
    assert answer.thinking == "secret"


def test_without_an_output_the_thinking_goes_nowhere():
    out = io.StringIO()
    answer = stream_answer(thinking_chunks(["x"], "y"), out)
    assert out.getvalue() == "y" and answer.thinking == "x"


def test_cut_off_while_thinking_the_colours_are_reset_and_not_called_done():
    out = Terminal()
    chunks = [thought_chunk("still going"), *answer_chunks()]
    answer = stream_answer(chunks, out, ThinkingOutput.choose(out, io.StringIO()))
    assert shown(out).endswith(f"still going{RESET}\n") and "done thinking" not in shown(out)
    assert answer.text == "" and answer.final is not None


def test_ctrl_c_while_thinking_resets_the_colours():
    out = Terminal()

    def interrupted():
        yield thought_chunk("half a th")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stream_answer(interrupted(), out, ThinkingOutput.choose(out, io.StringIO()))
    assert shown(out).endswith(f"half a th{RESET}\n")


def test_a_model_that_does_not_think_prints_as_before():
    out, err = Terminal(), io.StringIO()
    answer = stream_answer([text_chunk("plain"), *answer_chunks()], out, ThinkingOutput(err))
    assert shown(out) == "plain" and err.getvalue() == "" and answer.thinking == ""
