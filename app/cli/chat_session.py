"""The interactive chat of ``localllm run MODEL`` on a terminal, with Ollama's slash commands.

The conversation lives here (the messages so far, a system prompt and options set with
``/set``) and is sent whole on each turn, as ``ollama run`` does, images of earlier turns
included; for a model that sees images, the image paths typed in a turn are attached
(:mod:`localllm.app.cli.attachments`). A thinking model's thinking is shown dimmed before each
answer (``/set hidethinking`` hides it) and goes back with the reply in the history, for templates
that keep it. Ctrl-C stops an answer and keeps the chat going; Ctrl-D or
``/bye`` ends it. Lines go through readline, so arrow keys and history work; the history is
kept in ``<data dir>/history``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from localllm.app.cli.answer import stream_answer, timing_lines
from localllm.app.cli.attachments import ImageError, model_sees_images, user_message
from localllm.app.cli.chat_input import Command, MultilineInput, convert_parameter, parse_command
from localllm.app.cli.context import Context
from localllm.app.cli.errors import error_lines
from localllm.app.cli.show_view import parameter_lines, render_show
from localllm.app.cli.thinking_output import EFFORTS, ThinkingOutput
from localllm.daemon.api import ShowResponse
from localllm.daemon.client import ClientError

__all__ = ["ChatSession"]

PROMPT, CONTINUE = ">>> ", "... "

HELP = """Available Commands:
  /set            Set session variables
  /show           Show model information
  /load <model>   Load a different model (starts a new conversation)
  /clear          Clear session context
  /bye            Exit
  /?, /help       Help for a command
  /? shortcuts    Help for keyboard shortcuts

Use \"\"\" to begin a multi-line message."""

HELP_SET = """Available Commands:
  /set parameter ...     Set a parameter (e.g. /set parameter temperature 0.5)
  /set system <string>   Set the system message (\"\"\" for several lines)
  /set verbose           Show timings and token rates after each answer
  /set quiet             Stop showing them
  /set format json       Answer in JSON
  /set noformat          Answer in free text
  /set think             Think before answering (a thinking model)
  /set think <level>     Think with an effort: low, medium or high
  /set nothink           Answer without thinking
  /set hidethinking      Think, but show only the answer
  /set nohidethinking    Show the thinking again"""

HELP_SHOW = """Available Commands:
  /show info         Show details for this model
  /show license      Show the model's license
  /show modelfile    Show the Modelfile for this model
  /show parameters   Show the parameters for this model
  /show system       Show the system message
  /show template     Show the prompt template"""

HELP_SHORTCUTS = """Available keyboard shortcuts:
  Ctrl + a            Move to the beginning of the line
  Ctrl + e            Move to the end of the line
  Ctrl + r            Search the history
  Up / Down           Previous / next entry in the history
  Ctrl + c            Stop the answer being written (or clear the line)
  Ctrl + d            Exit (on an empty line)"""

_SHOW_MISSING = {
    "license": "No license was specified for this model.",
    "system": "No system message was specified for this model.",
    "template": "No prompt template was specified for this model.",
    "modelfile": "No Modelfile is available for this model.",
}


class ChatSession:
    def __init__(
        self,
        context: Context,
        model: str,
        *,
        options: dict[str, object] | None = None,
        keep_alive: str | None = None,
        format: str | Mapping[str, Any] | None = None,
        verbose: bool = False,
        system: str | None = None,
        sees_images: bool = False,
        think: bool | str | None = None,
        hide_thinking: bool = False,
        thinks: bool = False,
        read_line: Callable[[str], str] | None = None,
    ):
        self.context = context
        self.model = model
        self.options = dict(options or {})
        self.keep_alive = keep_alive
        self.format = format
        self.verbose = verbose
        self.system = system
        self.sees_images = sees_images  # the model has the "vision" capability
        self.think = think  # None: as the model does by default
        self.hide_thinking = hide_thinking
        self.thinks = thinks  # the model has the "thinking" capability
        self.messages: list[dict[str, Any]] = []
        self._dropped = 0  # the oldest messages the daemon last left out to fit the context
        self._read_line = read_line or input
        self._use_readline = read_line is None

    def run(self) -> int:
        collector = MultilineInput()
        with _history(self.context.settings.data_dir / "history", self._use_readline):
            while True:
                try:
                    line = self._read_line(CONTINUE if collector.in_block else PROMPT)
                except EOFError:
                    self.context.print()
                    return 0
                except KeyboardInterrupt:
                    collector.reset()
                    self.context.print("\nUse Ctrl + d or /bye to exit.")
                    continue
                entry = collector.feed(line)
                if entry is None or not entry.strip():
                    continue
                command = parse_command(entry)
                if command is None:
                    self.send(entry)
                elif not self.command(command):
                    return 0

    # -- a turn ---------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """Send one message with the conversation so far and print the answer."""
        try:
            message = user_message(text, self.sees_images, self.context.note)
        except ImageError as error:
            self.context.note(f"Error: {error}")
            return
        client = self.context.client()
        self.messages.append(message)
        try:
            chunks = client.chat(
                self.model,
                self.conversation(),
                options=self.options or None,
                keep_alive=self.keep_alive,
                format=self.format,
                think=self.think,
            )
            out, err = self.context.out, self.context.err
            thinking = ThinkingOutput.choose(out, err, hidden=self.hide_thinking)
            answer = stream_answer(chunks, out, thinking)
        except KeyboardInterrupt:
            self.messages.pop()
            self.context.print("\n")
            return
        except ClientError as error:
            self.messages.pop()
            self.context.print()
            for line in error_lines(error):
                self.context.note(line)
            return
        reply = {"role": "assistant", "content": answer.text}
        self.messages.append(reply | ({"thinking": answer.thinking} if answer.thinking else {}))
        self.context.print("\n" if not answer.text.endswith("\n") else "")
        self._tell_truncation(answer.final)
        if self.verbose and answer.final:
            for line in timing_lines(answer.final):
                self.context.note(line)
            self.context.note("")

    def _tell_truncation(self, final: object) -> None:
        """Say once when the conversation stops fitting the context (the daemon then leaves
        the oldest turns out, as Ollama does), and again after a /clear or a larger context."""
        truncated = getattr(final, "truncated", None)
        dropped = truncated.dropped_messages if truncated else 0
        if dropped and not self._dropped:
            self.context.note(
                f"Note: the conversation no longer fits the context; the model no longer sees "
                f"its oldest {dropped} message(s). /set parameter num_ctx <n> gives it more "
                f"room, /clear starts afresh."
            )
        self._dropped = dropped

    def conversation(self) -> list[dict[str, Any]]:
        system = [{"role": "system", "content": self.system}] if self.system else []
        return system + self.messages

    # -- slash commands -------------------------------------------------------------------
    def command(self, command: Command) -> bool:
        """Carry out a slash command; False when the chat should end."""
        name, words = command.name, command.words
        if name in ("bye", "exit"):
            return False
        if name in ("?", "help"):
            topic = words[0].lower() if words else ""
            texts = {"shortcuts": HELP_SHORTCUTS, "shortcut": HELP_SHORTCUTS}
            self.context.print({**texts, "set": HELP_SET, "show": HELP_SHOW}.get(topic, HELP))
        elif name == "clear":
            self.messages.clear()
            self.context.print("Cleared session context")
        elif name == "set":
            self._set(command)
        elif name == "show":
            self._show(words[0].lower() if words else "")
        elif name == "load" and words:
            self._load(words[0])
        else:
            self.context.print(f"Unknown command '/{name}'. Type /? for help")
        return True

    def _set(self, command: Command) -> None:
        words = command.words
        what = words[0].lower() if words else ""
        if what == "parameter" and len(words) >= 2:
            try:
                value = convert_parameter(words[1], words[2:])
            except ValueError as error:
                self.context.print(f"Couldn't set parameter: {error}")
                return
            self.options[words[1]] = value
            shown = ", ".join(value) if isinstance(value, list) else value
            self.context.print(f"Set parameter '{words[1]}' to '{shown}'")
        elif what == "system":
            self.system = command.rest_after(1) or None
            self.context.print("Set system message." if self.system else "Cleared system message.")
        elif what in ("verbose", "quiet"):
            self.verbose = what == "verbose"
            self.context.print(f"Set '{what}' mode.")
        elif what == "format" and len(words) == 2 and words[1] == "json":
            self.format = "json"
            self.context.print("Set format to 'json' mode.")
        elif what == "noformat":
            self.format = None
            self.context.print("Disabled format.")
        elif what in ("think", "nothink"):
            self._set_think(what, words[1:])
        elif what in ("hidethinking", "nohidethinking"):
            self.hide_thinking = what == "hidethinking"
            self.context.print(f"Set '{what}' mode.")
        else:
            self.context.print(HELP_SET)

    def _set_think(self, what: str, words: tuple[str, ...]) -> None:
        if what == "nothink" or not words:
            self.think = what == "think"
        elif words[0].lower() in EFFORTS and len(words) == 1:
            self.think = words[0].lower()
        else:
            efforts = ", ".join(EFFORTS)
            self.context.print(f"Couldn't set think: the level is one of {efforts}")
            return
        level = f" to '{self.think}'" if isinstance(self.think, str) else ""
        self.context.print(f"Set '{what}' mode{level}.")
        if self.think is not False and not self.thinks:
            self.context.note(f"warning: model '{self.model}' does not support thinking output")

    def _show(self, what: str) -> None:
        if what not in ("info", "license", "modelfile", "parameters", "system", "template"):
            self.context.print(HELP_SHOW)
            return
        try:
            info = self.context.client().show(self.model)
        except ClientError as error:
            self.context.note(error_lines(error)[0])
            return
        if what == "info":
            self.context.out.write(render_show(info))
        elif what == "parameters":
            self._show_parameters(info)
        else:
            value = self.system if what == "system" and self.system else getattr(info, what)
            self.context.print(value.rstrip() if value else _SHOW_MISSING[what])

    def _show_parameters(self, info: ShowResponse) -> None:
        model_lines = parameter_lines(info.parameters)
        user_lines = parameter_lines(self.options)
        if user_lines:
            self.context.print("User defined parameters:\n" + "\n".join(user_lines) + "\n")
        if model_lines:
            self.context.print("Model defined parameters:\n" + "\n".join(model_lines))
        if not (user_lines or model_lines):
            self.context.print("No parameters were specified for this model.")

    def _load(self, model: str) -> None:
        try:
            info = self.context.client().show(model)
        except ClientError as error:
            self.context.note(error_lines(error)[0])
            return
        self.model = model
        self.sees_images = model_sees_images(info)
        self.thinks = "thinking" in info.capabilities
        self.messages.clear()
        self.context.print(f"Loaded model '{model}' (new conversation).")


@contextlib.contextmanager
def _history(path: Path, enabled: bool) -> Iterator[None]:
    """Readline line editing and a history file, where the platform has readline."""
    readline = _readline() if enabled else None
    if readline is not None:
        readline.set_history_length(1000)
        with contextlib.suppress(OSError):
            readline.read_history_file(path)
    try:
        yield
    finally:
        if readline is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                readline.write_history_file(path)


def _readline() -> ModuleType | None:
    """The readline module, or None where the platform has none."""
    try:
        import readline
    except ImportError:  # Windows without pyreadline: plain input() still works
        return None
    return readline
