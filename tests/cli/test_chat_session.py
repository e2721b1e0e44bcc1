"""The interactive chat, driven with scripted lines (the terminal itself is tested end to end
through a pseudo-terminal in ``test_e2e_run.py``)."""

from __future__ import annotations

import base64
import io

import pytest

from localllm.app.cli.chat_session import HELP_SET, ChatSession
from localllm.app.cli.context import Context
from localllm.daemon.client import BadRequest
from localllm.daemon.settings import Settings
from tests.support.cli import FakeClient, answer_chunks, text_chunk, thinking_chunks


class Script:
    """Plays lines as ``input()`` would; raises EOFError (Ctrl-D) at the end."""

    def __init__(self, *lines):
        self.lines = list(lines)
        self.prompts = []

    def __call__(self, prompt):
        self.prompts.append(prompt)
        if not self.lines:
            raise EOFError
        line = self.lines.pop(0)
        if isinstance(line, BaseException):
            raise line
        return line


@pytest.fixture
def chat(tmp_path):
    fake = FakeClient(chat_chunks=answer_chunks("Hi", "!"))
    out, err = io.StringIO(), io.StringIO()
    context = Context(Settings(data_dir=tmp_path), out=out, err=err, client_factory=lambda s: fake)

    def make(*lines, **kwargs):
        script = Script(*lines)
        session = ChatSession(context, "tiny", read_line=script, **kwargs)
        return session, script

    return fake, out, err, make


def chats(fake):
    return [call for call in fake.calls if call[0] == "chat"]


def test_a_conversation_keeps_its_history(chat):
    fake, out, _, make = chat
    session, script = make("Hello", "", "How are you?", "/bye", "never read")
    assert session.run() == 0
    first, second = chats(fake)
    assert first[2] == [{"role": "user", "content": "Hello"}]
    assert second[2] == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi!"},
        {"role": "user", "content": "How are you?"},
    ]
    assert out.getvalue() == "Hi!\n\nHi!\n\n"
    assert script.lines == ["never read"]


def test_multiline_input_and_prompts(chat):
    fake, _, _, make = chat
    session, script = make('"""first', "second", '"""')
    session.run()
    assert chats(fake)[0][2][-1]["content"] == "first\nsecond"
    assert script.prompts == [">>> ", "... ", "... ", ">>> "]


def test_clear_and_set_system(chat):
    fake, out, _, make = chat
    session, _ = make("one", "/clear", '/set system """Be a', 'pirate."""', "two")
    session.run()
    assert chats(fake)[1][2] == [
        {"role": "system", "content": "Be a\npirate."},
        {"role": "user", "content": "two"},
    ]
    assert "Cleared session context\n" in out.getvalue()
    assert "Set system message.\n" in out.getvalue()


def test_set_parameter_verbose_and_format(chat):
    fake, out, err, make = chat
    session, _ = make(
        "/set parameter temperature 0.2",
        "/set parameter stop END STOP",
        "/set parameter warmth 3",
        "/set verbose",
        "/set format json",
        "go",
    )
    session.run()
    kwargs = chats(fake)[0][3]
    assert kwargs["options"] == {"temperature": 0.2, "stop": ["END", "STOP"]}
    assert kwargs["format"] == "json"
    text = out.getvalue()
    assert "Set parameter 'temperature' to '0.2'" in text
    assert "Couldn't set parameter: unknown parameter 'warmth'" in text
    assert "eval rate:            50.00 tokens/s" in err.getvalue()


def test_show_commands(chat):
    _, out, _, make = chat
    session, _ = make("/set parameter top_k 5", "/show info", "/show parameters", "/show license",
                      "/show system", "/show")  # fmt: skip
    session.run()
    text = out.getvalue()
    assert "  Model\n    architecture        llama" in text
    assert "User defined parameters:\ntop_k           5\n" in text
    assert "Model defined parameters:\ntemperature" in text
    assert "MIT License\nCopyright\nline three\n" in text
    assert "You are tiny.\n" in text
    assert "/show modelfile" in text  # bare /show lists what it can show


def test_help_and_unknown_commands(chat):
    _, out, _, make = chat
    session, _ = make("/?", "/? shortcuts", "/help set", "/nope")
    session.run()
    text = out.getvalue()
    assert "/set            Set session variables" in text
    assert "Ctrl + d            Exit" in text
    assert "/set parameter ..." in text
    assert "Unknown command '/nope'. Type /? for help" in text


def test_ctrl_c_at_the_prompt_and_during_an_answer(chat):
    fake, out, _, make = chat

    def interrupted(model, messages, **kwargs):
        fake.calls.append(("chat", model, messages, kwargs))
        yield text_chunk("partial")
        raise KeyboardInterrupt

    fake.chat = interrupted
    session, _ = make(KeyboardInterrupt(), "question")
    assert session.run() == 0
    assert "Use Ctrl + d or /bye to exit." in out.getvalue()
    assert "partial" in out.getvalue()
    assert session.messages == []  # the unanswered question is not kept


def test_an_error_keeps_the_chat_open(chat):
    fake, _, err, make = chat

    def failing(model, messages, **kwargs):
        raise BadRequest("invalid options: num_ctx", 400)
        yield  # pragma: no cover

    fake.chat = failing
    session, script = make("hi", "/bye")
    assert session.run() == 0
    assert err.getvalue() == "Error: invalid options: num_ctx\n"
    assert script.lines == []


def test_load_switches_model(chat):
    fake, out, _, make = chat
    fake.missing = {"nope"}
    session, _ = make("hello", "/load nope", "/load other", "again")
    session.run()
    assert session.model == "other"
    assert chats(fake)[-1][1] == "other" and len(chats(fake)[-1][2]) == 1
    assert "Loaded model 'other'" in out.getvalue()


def image(path, color="red"):
    from PIL import Image

    Image.new("RGB", (8, 8), color).save(path, "PNG")
    return base64.b64encode(path.read_bytes()).decode("ascii")


def test_images_named_in_a_turn_are_attached_and_kept(chat, tmp_path, monkeypatch):
    fake, _, err, make = chat
    monkeypatch.chdir(tmp_path)
    cat = image(tmp_path / "cat.png")
    session, _ = make("what is in ./cat.png?", "and 'cat.png'", "is it red", sees_images=True)
    session.run()
    first, second, third = chats(fake)
    assert first[2] == [{"role": "user", "content": "what is in?", "images": [cat]}]
    assert third[2][0] == first[2][0]  # earlier images go with every later turn
    assert second[2][2] == {"role": "user", "content": "and", "images": [cat]}
    assert third[2][-1] == {"role": "user", "content": "is it red"}
    assert err.getvalue().splitlines() == ["Added image './cat.png'", "Added image 'cat.png'"]


def test_a_model_that_does_not_see_gets_the_path_as_text(chat, tmp_path, monkeypatch):
    fake, _, err, make = chat
    monkeypatch.chdir(tmp_path)
    image(tmp_path / "cat.png")
    session, _ = make("what is in ./cat.png")
    session.run()
    assert chats(fake)[0][2] == [{"role": "user", "content": "what is in ./cat.png"}]
    assert err.getvalue() == ""


def test_a_image_that_cannot_be_sent_skips_the_turn(chat, tmp_path, monkeypatch):
    fake, _, err, make = chat
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.png").write_text("not an image")
    session, script = make("read notes.png", "hello", "/bye", sees_images=True)
    assert session.run() == 0
    assert err.getvalue().startswith("Error: cannot read image 'notes.png': it is not a PNG")
    assert [call[2] for call in chats(fake)] == [[{"role": "user", "content": "hello"}]]
    assert script.lines == []


def test_load_learns_whether_the_new_model_sees(chat, tmp_path, monkeypatch):
    fake, _, _, make = chat
    monkeypatch.chdir(tmp_path)
    cat = image(tmp_path / "cat.png")
    fake.show_info = fake.show_info.model_copy(update={"capabilities": ["completion", "vision"]})
    session, _ = make("/load seer", "what is cat.png")
    session.run()
    assert session.sees_images
    assert chats(fake)[0][2] == [{"role": "user", "content": "what is", "images": [cat]}]


def test_set_think_levels_and_nothink(chat):
    fake, out, err, make = chat
    lines = ["/set think", "a", "/set think high", "b", "/set nothink", "c", "/set think max", "d"]
    session, _ = make(*lines, thinks=True)
    session.run()
    assert [call[3].get("think") for call in chats(fake)] == [True, "high", False, False]
    text = out.getvalue()
    assert "Set 'think' mode.\n" in text and "Set 'think' mode to 'high'.\n" in text
    assert "Set 'nothink' mode.\n" in text
    assert "Couldn't set think: the level is one of low, medium, high\n" in text
    assert "warning" not in err.getvalue()
    assert "/set think <level>" in HELP_SET and "/set hidethinking" in HELP_SET


def test_set_think_on_a_model_that_does_not_think_warns(chat):
    _, _, err, make = chat
    session, _ = make("/set think")
    session.run()
    assert session.think is True
    assert err.getvalue() == "warning: model 'tiny' does not support thinking output\n"


def test_thinking_is_shown_apart_hidden_on_request_and_kept_in_the_history(chat):
    fake, out, err, make = chat
    fake.chat_chunks = thinking_chunks(["Hmm."], "Hi!")
    session, _ = make("one", "/set hidethinking", "two", "/set nohidethinking", "three")
    session.run()
    assert out.getvalue().count("Hi!\n") == 3 and "Hmm." not in out.getvalue()
    # stdout is not a terminal here: the thinking is on stderr, once hidden it is not
    assert err.getvalue() == "Thinking...\nHmm.\n...done thinking.\n\n" * 2
    assert "Set 'hidethinking' mode.\n" in out.getvalue()
    reply = {"role": "assistant", "content": "Hi!", "thinking": "Hmm."}
    assert chats(fake)[-1][2][1] == reply and chats(fake)[-1][2][3] == reply


def test_the_chat_says_once_when_it_no_longer_fits_the_context(chat):
    """The daemon drops the oldest turns (its final chunk says how many): the chat says so the
    first time, not on every turn after, and again after it fitted once more."""
    from localllm.daemon.api.native_chat import TruncatedHistory

    fake, _, err, make = chat
    *pieces, final = answer_chunks("Hi")
    cut = final.model_copy(update={"truncated": TruncatedHistory(dropped_messages=2, kept_from=2)})
    finals = [final, cut, cut, final, cut]
    original = fake.chat

    def chat_call(*args, **kwargs):
        list(original(*args, **kwargs))
        yield from [*pieces, finals.pop(0)]

    fake.chat = chat_call
    session, _ = make("one", "two", "three", "four", "five", "/bye")
    assert session.run() == 0
    notes = [line for line in err.getvalue().splitlines() if "no longer fits" in line]
    assert len(notes) == 2 and "oldest 2 message(s)" in notes[0]
