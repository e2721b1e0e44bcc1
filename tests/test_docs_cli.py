"""docs/cli.md and the ``localllm`` command cannot drift apart.

The command's own parser is walked: every command (and alias) and every long option its
``--help`` lists must be on the page, each option under its command's heading; and every
``localllm <command>`` and ``--option`` the page writes as code must exist, on the command it
is written with. ``localllm app`` hands its options to the desktop app, whose parser is read
from its ``--help``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from localllm.app.cli.main import build_parser

CLI_PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
TOP_LEVEL = frozenset({"--help", "--version"})
HEADING = re.compile(r"^(#+) (.*)$", re.MULTILINE)
CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.DOTALL)
INVOCATION = re.compile(r"\blocalllm ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")
LONG_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

Command = tuple[str, ...]  # ("remote", "add")


@dataclass(frozen=True)
class Commands:
    """What the parser knows: each command's long options, and its other names."""

    options: dict[Command, frozenset[str]]
    aliases: dict[Command, Command]  # ("ls",) -> ("list",)

    def resolve(self, words: tuple[str, ...]) -> Command | None:
        """The command ``localllm WORDS...`` runs (a group needs its sub-command)."""
        for length in (2, 1):
            name = words[:length]
            if len(name) == length and (name := self.aliases.get(name, name)) in self.options:
                return name
        return None

    def all_options(self) -> frozenset[str]:
        return frozenset().union(TOP_LEVEL, *self.options.values())


def walk(parser: argparse.ArgumentParser, prefix: Command = ()) -> Commands:
    """Every command under ``parser`` (argparse has no public way to list them)."""
    options: dict[Command, frozenset[str]] = {}
    aliases: dict[Command, Command] = {}
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        primary = {choice.dest for choice in action._choices_actions}
        by_parser = {id(sub): name for name, sub in action.choices.items() if name in primary}
        for name, sub in action.choices.items():
            command = (*prefix, name)
            if name not in primary:
                aliases[command] = (*prefix, by_parser[id(sub)])
                continue
            inner = walk(sub, command)
            if inner.options:  # a group: `localllm remote` runs its actions
                options |= inner.options
                aliases |= inner.aliases
            else:
                options[command] = _long_options(sub)
    return Commands(options, aliases)


def _long_options(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(
        option
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    )


def app_options() -> frozenset[str]:
    """The desktop app's own options, as ``localllm app --help`` prints them."""
    from localllm.app.gui.main import parse_args

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
        parse_args(["--help"], env={})
    return frozenset(LONG_OPTION.findall(printed.getvalue())) - {"--help"}


@pytest.fixture(scope="module")
def commands() -> Commands:
    walked = walk(build_parser())
    return Commands({**walked.options, ("app",): app_options()}, walked.aliases)


@pytest.fixture(scope="module")
def page() -> str:
    return CLI_PAGE.read_text(encoding="utf-8")


def sections(page: str, commands: Commands) -> dict[Command, str]:
    """Each command's part of the page: from its heading (`` `localllm remote add` ``) to the
    next heading of the same or a higher level."""
    return {command: page[start:end] for command, start, end in _section_spans(page, commands)}


def _section_spans(page: str, commands: Commands) -> list[tuple[Command, int, int]]:
    headings = list(HEADING.finditer(page))
    spans = []
    for index, heading in enumerate(headings):
        named = INVOCATION.search(heading.group(2))
        if named is None or (command := commands.resolve(_words(named))) is None:
            continue
        level = len(heading.group(1))
        end = next(
            (later.start() for later in headings[index + 1 :] if len(later.group(1)) <= level),
            len(page),
        )
        spans.append((command, heading.start(), end))
    return spans


def _words(invocation: re.Match[str]) -> tuple[str, ...]:
    return tuple(word for word in invocation.groups() if word)


def test_the_parser_is_walked(commands):
    assert {("run",), ("remote", "add"), ("app",), ("doctor",)} <= set(commands.options)
    assert commands.aliases[("ls",)] == ("list",)
    assert "--kv-cache-type" in commands.options[("show",)]
    assert {"--data-dir", "--theme"} <= commands.options[("app",)]


def test_every_command_has_its_heading(page, commands):
    missing = set(commands.options) - set(sections(page, commands))
    assert not missing, f"docs/cli.md has no `localllm ...` heading for {sorted(missing)}"


def test_every_alias_is_named(page, commands):
    code = " ".join(_code(page))
    unnamed = [alias for alias in commands.aliases if f"localllm {' '.join(alias)}" not in code]
    assert not unnamed, f"docs/cli.md never writes {unnamed}"


def test_every_option_is_under_its_command(page, commands):
    parts = sections(page, commands)
    missing = {
        " ".join(command): sorted(
            option for option in options if not re.search(rf"{option}(?![\w-])", parts[command])
        )
        for command, options in commands.options.items()
        if command in parts
    }
    missing = {command: options for command, options in missing.items() if options}
    assert not missing, f"docs/cli.md leaves out options: {missing}"
    assert all(option in page for option in TOP_LEVEL)


def test_every_command_named_exists(page, commands):
    unknown = {
        invocation.group(0)
        for code in _code(page)
        for invocation in INVOCATION.finditer(code)
        if commands.resolve(_words(invocation)) is None
    }
    assert not unknown, f"docs/cli.md names commands that do not exist: {sorted(unknown)}"


def test_every_option_named_exists_on_its_command(page, commands):
    wrong = set()
    for section_command, code in _code_by_section(page, commands):
        for command, option in _options_in(code, commands, section_command):
            known = commands.options[command] if command else commands.all_options()
            if option not in known | TOP_LEVEL:
                wrong.add(f"{option} ({' '.join(command or ('any command',))})")
    assert not wrong, f"docs/cli.md names options that do not exist: {sorted(wrong)}"


def _code(text: str) -> list[str]:
    """Code blocks and inline code: where the page writes commands to type."""
    return [block or span for block, span in CODE.findall(text)]


def _code_by_section(page: str, commands: Commands):
    """Each piece of code with the command whose section holds it (None outside them)."""
    outside, position = [], 0
    for command, start, end in _section_spans(page, commands):
        outside.append(page[position:start])
        position = end
        yield from ((command, code) for code in _code(page[start:end]))
    outside.append(page[position:])
    yield from ((None, code) for code in _code("".join(outside)))


def _options_in(code: str, commands: Commands, default: Command | None):
    """Each option with the command it goes with: the ``localllm ...`` before it on its line,
    else the section's command."""
    for line in code.splitlines():
        command = default
        position = 0
        for invocation in INVOCATION.finditer(line):
            before = LONG_OPTION.findall(line, position, invocation.start())
            yield from ((command, option) for option in before)
            command = commands.resolve(_words(invocation))
            position = invocation.end()
        yield from ((command, option) for option in LONG_OPTION.findall(line, position))
