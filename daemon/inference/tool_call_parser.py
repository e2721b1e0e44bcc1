"""Tool calls found in a model's output as it streams, each streamed as soon as it is known.

Calls come as ``<tool_call>{...}</tool_call>`` blocks anywhere in the answer (Hermes, Qwen),
or as a bare JSON object, several objects, or a list of objects at its start (what the grammar
forces for ``tool_choice`` "required" or a named function). A call object holds ``name`` and
``arguments`` (or ``parameters``): an object, or JSON text in a string.

Text that may still turn out to be a call is held back and released as content once it cannot
be one. A call is committed, and streams, once its name is one of the tools and its arguments
have begun as a JSON object (or, in a string, are complete and hold one): its first piece
carries an id and the name, the next ones its arguments text exactly as the model writes it.
A committed call stays a call: cut off before its arguments end, it keeps what was written (as
OpenAI does, the finish reason then says "length"); arguments that end but are not valid JSON
are kept as written too, since they already streamed. Whitespace around calls is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from localllm.daemon.inference.json_scan import JsonValue, object_text, string_value
from localllm.daemon.inference.tool_calls import ToolCall, ToolCallDelta, new_call_id

__all__ = ["Piece", "ToolCallParser", "parse_tool_calls"]

#: What the parser hands on, in order: content text, or the next piece of a tool call.
Piece = str | ToolCallDelta

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_SPACE = frozenset(" \t\r\n")
_ARGUMENT_KEYS = ("arguments", "parameters")
_State = Callable[[str], None]  # reads the next character
_Context = Literal["block", "bare", "list"]  # where a call object sits


@dataclass
class _Draft:
    """The call object being read."""

    key: str | None = None  # the key whose value is being read
    value: JsonValue | None = None
    reading_arguments: bool = False  # the value is the call's arguments
    has_arguments: bool = False
    name: str | None = None
    arguments: str | None = None  # read whole before the name was known
    index: int = -1
    id: str | None = None  # set once committed
    streamed: list[str] = field(default_factory=list)  # the arguments text sent so far

    @property
    def committed(self) -> bool:
        return self.id is not None


class ToolCallParser:
    """Feed the model's text as it comes; each ``feed`` returns what can be sent now."""

    def __init__(self, names: Sequence[str] | None):
        self._names = None if names is None else frozenset(names)
        self._state: _State = self._start
        self._held: list[str] = []  # read, not yet known to be content or call syntax
        self._tag = ""  # the end of ``_held`` matched so far against a tag
        self._context: _Context = "block"  # where the current call object sits: block, bare or list
        self._draft: _Draft | None = None
        self._calls: list[_Draft] = []
        self._out: list[Piece] = []

    def feed(self, text: str) -> list[Piece]:
        for char in text:
            self._state(char)
        out, self._out = self._out, []
        return out

    def finish(self) -> tuple[list[Piece], list[ToolCall]]:
        """At the end: the last pieces (text held back that was no call) and all the calls."""
        if self._draft is None or not self._draft.committed:
            if self._state in (self._block_end, self._between, self._list_next) or (
                self._state == self._call_start and self._calls and not "".join(self._held).strip()
            ):
                self._held = []  # only what follows a call: spacing, a cut-off closing tag
            self._release()
        calls = [ToolCall(d.id or "", d.name or "", "".join(d.streamed)) for d in self._calls]
        out, self._out = self._out, []
        return out, calls

    # -- output -----------------------------------------------------------------------------
    def _content(self, text: str) -> None:
        if self._out and isinstance(self._out[-1], str):
            self._out[-1] += text
        else:
            self._out.append(text)

    def _hold(self, char: str) -> None:
        self._held.append(char)

    def _release(self) -> None:
        if self._held:
            self._content("".join(self._held))
        self._held, self._tag = [], ""

    def _arguments(self, draft: _Draft, text: str) -> None:
        draft.streamed.append(text)
        last = self._out[-1] if self._out else None
        if isinstance(last, ToolCallDelta) and last.index == draft.index and last.id is None:
            self._out[-1] = ToolCallDelta(draft.index, arguments=last.arguments + text)
        else:
            self._out.append(ToolCallDelta(draft.index, arguments=text))

    def _commit(self, draft: _Draft) -> None:
        draft.index, draft.id = len(self._calls), new_call_id()
        self._calls.append(draft)
        self._held = []  # the call's syntax so far is no content
        self._out.append(ToolCallDelta(draft.index, draft.id, draft.name))
        if draft.arguments is not None:
            self._arguments(draft, draft.arguments)

    # -- around calls -----------------------------------------------------------------------
    def _start(self, char: str) -> None:
        if char in _SPACE:
            self._hold(char)
        elif char in "{[":
            self._hold(char)
            self._context = "list" if char == "[" else "bare"
            self._state = self._call_start if char == "[" else self._open_object()
        else:
            self._text(char)

    def _text(self, char: str) -> None:
        self._state = self._text
        if char in _SPACE:
            self._hold(char)  # dropped if a call follows
        elif char == "<":
            self._hold(char)
            self._tag = char
            self._state = self._open_tag
        else:
            self._release()
            self._content(char)

    def _open_tag(self, char: str) -> None:
        if not _OPEN.startswith(self._tag + char):
            self._release()
            self._text(char)
            return
        self._hold(char)
        self._tag += char
        if self._tag == _OPEN:
            self._context, self._tag = "block", ""
            self._state = self._call_start

    def _call_start(self, char: str) -> None:
        """After ``<tool_call>``, ``[`` or ``,`` in a list: a call object comes next."""
        if char in _SPACE:
            self._hold(char)
        elif char == "{":
            self._hold(char)
            self._state = self._open_object()
        else:
            self._not_a_call(char)

    def _block_end(self, char: str) -> None:
        if not self._tag and char in _SPACE:
            self._hold(char)
        elif _CLOSE.startswith(self._tag + char):
            self._hold(char)
            self._tag += char
            if self._tag == _CLOSE:
                self._held, self._tag = [], ""
                self._state = self._between
        else:
            self._release()
            self._text(char)

    def _between(self, char: str) -> None:
        """After a call: another one may follow."""
        if char in _SPACE:
            self._hold(char)
        elif char == "{" and self._context == "bare":
            self._hold(char)
            self._state = self._open_object()
        else:
            self._text(char)

    def _list_next(self, char: str) -> None:
        if char in _SPACE:
            self._hold(char)
        elif char in ",]":
            self._held = []
            self._state = self._call_start if char == "," else self._between
        else:
            self._release()
            self._text(char)

    def _not_a_call(self, char: str | None) -> None:
        """What was held is content after all; ``char`` (not yet read) is read as text."""
        self._draft = None
        self._release()
        self._state = self._text
        if char is not None:
            self._text(char)

    # -- a call object ----------------------------------------------------------------------
    def _open_object(self) -> _State:
        self._draft = _Draft()
        return self._key_or_end

    def _syntax(self, char: str) -> None:
        """``char`` is part of a call object's own syntax: content only if it is no call."""
        if self._draft is not None and not self._draft.committed:
            self._hold(char)

    def _unexpected(self, char: str) -> None:
        """Not JSON a call can be: no call if none is committed, else the call object ends."""
        if self._draft is not None and self._draft.committed:
            self._object_done()
            self._state(char)
        else:
            self._not_a_call(char)

    def _key_or_end(self, char: str) -> None:
        if char in _SPACE:
            self._syntax(char)
        elif char == '"':
            self._begin_value(char, self._key)
        elif char == "}":
            self._syntax(char)
            self._object_end()
        else:
            self._unexpected(char)

    def _begin_value(self, char: str, state: _State) -> None:
        assert self._draft is not None
        self._draft.value = JsonValue()
        self._state = state
        state(char)

    def _key(self, char: str) -> None:
        draft = self._draft
        assert draft is not None and draft.value is not None
        draft.value.feed(char)
        self._syntax(char)
        if draft.value.done:
            draft.key = string_value(draft.value.text)
            self._state = self._colon

    def _colon(self, char: str) -> None:
        if char in _SPACE or char == ":":
            self._syntax(char)
            if char == ":":
                self._state = self._value_start
        else:
            self._unexpected(char)

    def _value_start(self, char: str) -> None:
        draft = self._draft
        assert draft is not None
        if char in _SPACE:
            self._syntax(char)
            return
        draft.reading_arguments = draft.key in _ARGUMENT_KEYS and not draft.has_arguments
        if draft.reading_arguments:
            if char not in '{"':
                self._unexpected(char)  # arguments are an object (or JSON text in a string)
                return
            if char == "{" and draft.name is not None and not draft.committed:
                self._commit(draft)
        self._begin_value(char, self._value)

    def _value(self, char: str) -> None:
        draft = self._draft
        assert draft is not None and draft.value is not None
        if not draft.value.feed(char):  # a scalar ended just before ``char``
            self._value_end(draft)
            self._state(char)
            return
        if draft.reading_arguments and draft.committed:
            self._arguments(draft, char)
        else:
            self._syntax(char)
        if draft.value.done:
            self._value_end(draft)

    def _value_end(self, draft: _Draft) -> None:
        assert draft.value is not None
        text, self._state = draft.value.text, self._next_or_end
        if draft.reading_arguments:
            draft.has_arguments = True
            if not draft.committed:
                draft.arguments = object_text(text)
                if draft.arguments is None:
                    self._not_a_call(None)
                elif draft.name is not None:
                    self._commit(draft)
        elif draft.key == "name" and draft.name is None and not draft.committed:
            draft.name = string_value(text)
            if draft.name is None or (self._names is not None and draft.name not in self._names):
                self._not_a_call(None)
            elif draft.arguments is not None:
                self._commit(draft)

    def _next_or_end(self, char: str) -> None:
        if char in _SPACE or char == ",":
            self._syntax(char)
            if char == ",":
                self._state = self._key_or_end
        elif char == "}":
            self._syntax(char)
            self._object_end()
        else:
            self._unexpected(char)

    def _object_end(self) -> None:
        draft = self._draft
        assert draft is not None
        if not draft.committed:
            if draft.name is None:
                self._not_a_call(None)
                return
            draft.arguments = "{}"  # a call without arguments
            self._commit(draft)
        self._object_done()

    def _object_done(self) -> None:
        self._draft, self._held, self._tag = None, [], ""
        self._state = {"block": self._block_end, "list": self._list_next}.get(
            self._context, self._between
        )


def parse_tool_calls(text: str, names: Sequence[str] | None = None) -> list[ToolCall]:
    """The tool calls in a whole output, exactly as streaming it would find them."""
    parser = ToolCallParser(names)
    parser.feed(text)
    return parser.finish()[1]
