"""Reading what a person types into ``localllm run``: multi-line blocks, slash commands and
typed ``/set parameter`` values. Pure functions and a small state machine, no terminal I/O.

A message that starts with triple quotes continues, line after line, until a line that ends
with them (as in Ollama); ``/set system \"\"\"...`` works the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localllm.model_registry.modelfile import PARAMETER_TYPES

__all__ = ["Command", "MultilineInput", "convert_parameter", "parse_command", "parse_options"]

QUOTES = '"""'
_BOOLS = {"true": True, "t": True, "1": True, "yes": True}
_BOOLS |= {"false": False, "f": False, "0": False, "no": False}
# options a request may carry that a Modelfile's PARAMETER does not
_REQUEST_ONLY = {"think_budget": int}


class MultilineInput:
    """Feed it lines; it hands back a whole entry once one is complete."""

    def __init__(self) -> None:
        self._head: str | None = None
        self._parts: list[str] = []

    @property
    def in_block(self) -> bool:
        return self._head is not None

    def reset(self) -> None:
        self._head, self._parts = None, []

    def feed(self, line: str) -> str | None:
        """The complete entry this line finishes, or None while a block is still open."""
        if self._head is not None:
            closed = line.rstrip().endswith(QUOTES)
            self._parts.append(line.rstrip()[: -len(QUOTES)] if closed else line)
            return self._finish() if closed else None
        start = _block_start(line)
        if start < 0:
            return line
        head, body = line[:start], line[start + len(QUOTES) :]
        if body.rstrip().endswith(QUOTES) and len(body.rstrip()) >= len(QUOTES):
            return head + body.rstrip()[: -len(QUOTES)]
        self._head, self._parts = head, [body]
        return None

    def _finish(self) -> str:
        head, parts = self._head or "", self._parts
        if parts and not parts[0].strip():
            parts = parts[1:]
        if parts and not parts[-1].strip():
            parts = parts[:-1]
        self.reset()
        return head + "\n".join(parts)


def _block_start(line: str) -> int:
    """Where a triple-quoted block opens: at the start of a message, or inside a command."""
    stripped = line.lstrip()
    if stripped.startswith(QUOTES):
        return len(line) - len(stripped)
    return line.find(QUOTES) if stripped.startswith("/") else -1


@dataclass(frozen=True)
class Command:
    """``/set parameter top_k 20`` is name ``set``, words ``[parameter, top_k, 20]``, and
    ``text`` the raw remainder after the name (newlines kept, for ``/set system``)."""

    name: str
    words: tuple[str, ...]
    text: str

    def rest_after(self, count: int) -> str:
        """The raw text after the first ``count`` words (a system prompt keeps its layout)."""
        match = re.match(r"\s*" + r"\S+(?:\s+|$)" * count, self.text)
        return self.text[match.end() :].strip() if match else ""


def parse_command(entry: str) -> Command | None:
    """The slash command in ``entry``, or None when it is a message."""
    stripped = entry.strip()
    if not stripped.startswith("/"):
        return None
    name, _, text = stripped[1:].partition(" ")
    if "\n" in name:
        name, _, more = name.partition("\n")
        text = more + (" " + text if text else "")
    return Command(name.lower(), tuple(text.split()), text)


def convert_parameter(name: str, words: list[str] | tuple[str, ...]) -> object:
    """The typed value of ``/set parameter name words...`` (``stop`` takes several words)."""
    kind = PARAMETER_TYPES.get(name) or _REQUEST_ONLY.get(name)
    if kind is None:
        raise ValueError(f"unknown parameter {name!r}")
    if not words:
        raise ValueError(f"parameter {name} needs a value")
    if name == "stop":
        return list(words)
    raw = " ".join(words)
    try:
        if kind is bool:
            return _BOOLS[raw.lower()]
        return kind(raw)
    except (KeyError, ValueError):
        wanted = {int: "an integer", float: "a number", bool: "true or false"}.get(kind, "text")
        raise ValueError(f"parameter {name} needs {wanted}, got {raw!r}") from None


def parse_options(pairs: list[list[str]] | None) -> dict[str, object]:
    """``-o NAME VALUE`` pairs into typed options (repeating ``-o stop X`` collects stops)."""
    options: dict[str, object] = {}
    stops: list[str] = []
    for name, value in pairs or []:
        typed = convert_parameter(name, [value])
        if name == "stop":
            stops.append(value)
            options["stop"] = stops
        else:
            options[name] = typed
    return options
