"""The transcript's own links, typed: one frozen dataclass per thing a link or a message's
button asks for, written as ``action:<kind>[:<argument>...]`` by ``href`` and read back by
``parse`` alone.

Each argument is percent-encoded (every character but letters, digits and ``-._~``), so an id
with a colon, a space, a ``#`` or a ``%`` in it cannot split or cut the link, and the link needs
no escaping inside an HTML attribute. Ids made only of those safe characters read the same as
they always did (``action:version:a2:1``). Anything ``parse`` does not recognise exactly (an
unknown kind, a missing or extra argument, a number that is not one, a broken escape) is None:
a link the transcript ignores, never an exception.
"""

import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, get_args
from urllib.parse import quote, unquote

__all__ = [
    "SCHEME",
    "Action",
    "ContinueReply",
    "CopyMessage",
    "DecideTool",
    "DeleteMessage",
    "EditMessage",
    "LoadAnyway",
    "OpenSource",
    "ReadAloud",
    "Regenerate",
    "ShowAll",
    "ShowLess",
    "ShowVersion",
    "ToggleStats",
    "ToggleSummary",
    "ToggleThinking",
    "ToolChoice",
    "href",
    "parse",
]

SCHEME = "action"
ToolChoice = Literal["approve", "always", "deny"]
_ESCAPED = re.compile(r"(?:[^%]|%[0-9A-Fa-f]{2})*")  # every % starts a two-digit escape


@dataclass(frozen=True, slots=True)
class CopyMessage:
    kind: ClassVar[str] = "copy"
    message_id: str


@dataclass(frozen=True, slots=True)
class EditMessage:
    kind: ClassVar[str] = "edit"
    message_id: str


@dataclass(frozen=True, slots=True)
class DeleteMessage:
    kind: ClassVar[str] = "delete"
    message_id: str


@dataclass(frozen=True, slots=True)
class ReadAloud:
    """Speak an answer with the chosen voice (Settings, Voice)."""

    kind: ClassVar[str] = "read"
    message_id: str


@dataclass(frozen=True, slots=True)
class ContinueReply:
    """Go on writing a reply that was cut off."""

    kind: ClassVar[str] = "continue"
    message_id: str


@dataclass(frozen=True, slots=True)
class Regenerate:
    """Answer the last message again (Try again, Regenerate, Answer)."""

    kind: ClassVar[str] = "regenerate"


@dataclass(frozen=True, slots=True)
class LoadAnyway:
    """Answer again, loading the model though its plan does not fit."""

    kind: ClassVar[str] = "load_anyway"


@dataclass(frozen=True, slots=True)
class ShowVersion:
    kind: ClassVar[str] = "version"
    message_id: str
    number: int  # from 0

    def __post_init__(self) -> None:
        _require_count(self.number)


@dataclass(frozen=True, slots=True)
class DecideTool:
    kind: ClassVar[str] = "tool"
    call_id: str
    choice: ToolChoice

    def __post_init__(self) -> None:
        if self.choice not in get_args(ToolChoice):
            raise ValueError(f"not a tool decision: {self.choice!r}")


@dataclass(frozen=True, slots=True)
class ShowAll:
    """Unfold a long message or tool result."""

    kind: ClassVar[str] = "unfold"
    key: str  # a message's id or a tool call's


@dataclass(frozen=True, slots=True)
class ShowLess:
    """Fold a long message or tool result again."""

    kind: ClassVar[str] = "fold"
    key: str  # a message's id or a tool call's


@dataclass(frozen=True, slots=True)
class ToggleSummary:
    """Open or close the summary of what the model no longer sees."""

    kind: ClassVar[str] = "summary"


@dataclass(frozen=True, slots=True)
class OpenSource:
    """Show the passage a reply cites."""

    kind: ClassVar[str] = "source"
    message_id: str
    number: int  # from 1, as the reply numbers its sources

    def __post_init__(self) -> None:
        _require_count(self.number)


@dataclass(frozen=True, slots=True)
class ToggleThinking:
    kind: ClassVar[str] = "thinking"
    message_id: str


@dataclass(frozen=True, slots=True)
class ToggleStats:
    kind: ClassVar[str] = "stats"
    message_id: str


Action = (
    CopyMessage
    | EditMessage
    | DeleteMessage
    | ReadAloud
    | ContinueReply
    | Regenerate
    | LoadAnyway
    | ShowVersion
    | DecideTool
    | ShowAll
    | ShowLess
    | ToggleSummary
    | OpenSource
    | ToggleThinking
    | ToggleStats
)

_KINDS: dict[str, type[Action]] = {cls.kind: cls for cls in get_args(Action)}


def _require_count(number: int) -> None:
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ValueError(f"not a count: {number!r}")


def href(action: Action) -> str:
    """The link for ``action``: ``action:<kind>`` and its arguments, each percent-encoded."""
    arguments = (str(getattr(action, f.name)) for f in fields(action))
    return ":".join([SCHEME, action.kind, *(quote(a, safe="") for a in arguments)])


def parse(link: str) -> Action | None:
    """The action ``link`` asks for, or None when it is not exactly one of ours."""
    scheme, _, rest = link.partition(":")
    kind, *raw = rest.split(":")
    cls = _KINDS.get(kind) if scheme == SCHEME else None
    if cls is None or len(raw) != len(fields(cls)):
        return None
    try:
        # each as its field's type says (str or int); a tool's choice checked by DecideTool
        values: list[Any] = [_argument(t, f.type) for t, f in zip(raw, fields(cls), strict=True)]
        return cls(*values)
    except ValueError:  # UnicodeDecodeError included
        return None


def _argument(text: str, kind: object) -> str | int:
    if not _ESCAPED.fullmatch(text):
        raise ValueError(f"a broken escape: {text!r}")
    value = unquote(text, errors="strict")
    if kind is not int:
        return value
    if not (value.isascii() and value.isdecimal()):
        raise ValueError(f"not a number: {value!r}")
    return int(value)
