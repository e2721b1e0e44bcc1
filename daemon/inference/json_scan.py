"""JSON as a model writes it: where a value ends, found a character at a time, and what a
whole value's text holds.

Streaming a tool call's arguments needs the exact text of one value inside a larger object
and the moment it ends, while the text is still arriving. JSON libraries parse whole
documents (or partial ones into Python values) but say nothing of where a value's text ends,
so this tracks just enough: strings, escapes and nesting. Whether the text is valid JSON is
left to ``json.loads`` once it is whole.
"""

from __future__ import annotations

import json

__all__ = ["JsonValue", "loads", "object_text", "string_value"]

_SCALAR_END = frozenset(" \t\r\n,}]")


class JsonValue:
    """One value's text as written; ``done`` once it is complete. Scalars (numbers, ``true``,
    ``false``, ``null``) end at the first character that cannot be part of them, which
    ``feed`` then refuses so the caller can read it as what follows the value."""

    def __init__(self) -> None:
        self._chars: list[str] = []
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._scalar = False
        self.done = False

    @property
    def text(self) -> str:
        return "".join(self._chars)

    @property
    def is_object(self) -> bool:
        return self._chars[:1] == ["{"]

    def feed(self, char: str) -> bool:
        """Take ``char``; False when it is past the end of a scalar (not taken)."""
        if not self._chars and char not in '{["':
            self._scalar = True
        if self._scalar:
            if char in _SCALAR_END:
                self.done = True
                return False
            self._chars.append(char)
            return True
        self._chars.append(char)
        if self._in_string:
            self._string_char(char)
        elif char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            self.done = self._depth <= 0
        return True

    def _string_char(self, char: str) -> None:
        if self._escaped:
            self._escaped = False
        elif char == "\\":
            self._escaped = True
        elif char == '"':
            self._in_string = False
            self.done = self._depth == 0


def loads(text: str | bytes) -> object:
    """``json.loads``, with text nested deeper than it can follow (a few thousand ``[``: a
    ``RecursionError``) refused as a ``ValueError``, like any other text that is not JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def string_value(text: str) -> str | None:
    """The string a JSON string's text holds (None if it is not one)."""
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def object_text(text: str) -> str | None:
    """``text`` if it is a JSON object, or the JSON object text a JSON string holds (as some
    models write a call's arguments); None otherwise."""
    if text.startswith('"'):
        inner = string_value(text)
        return inner if inner is not None and object_text(inner.strip()) else None
    try:
        return text if isinstance(loads(text), dict) else None
    except ValueError:
        return None
