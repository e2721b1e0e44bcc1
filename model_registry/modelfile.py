"""Ollama Modelfiles: parse one into a :class:`Modelfile`, and write one back out.

This module only reads and writes text; resolving ``FROM`` against the store or the file
system is the caller's job. Each instruction is a case-insensitive keyword followed by a value
that is bare (the rest of the line, trimmed), in double quotes (backslash escapes a quote or a
backslash) or between triple double quotes (may span lines, taken verbatim). A line whose first
word starts with ``#`` is a comment. Every error carries the line number it was found on.

Repeated ``SYSTEM``, ``TEMPLATE`` or ``PARAMETER`` lines keep the last value, as Ollama does,
except ``PARAMETER stop``, which collects a list.

``ADAPTER path [scale]`` names a LoRA adapter and, optionally, how strongly it applies (a number
from -10 to 10; 1 when left out). Ollama has no scale: a Modelfile written for it reads the same.
A path whose last word is a number is quoted (``ADAPTER "./lora 2" 0.5``).

``DRAFT <model name or ./path.gguf>`` names a draft model for speculative decoding (ours; Ollama
has none): a smaller model of the same vocabulary that guesses the next tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypedDict, cast

from localllm.model_registry.errors import InvalidParameterError, ModelfileError
from localllm.model_registry.parameters import OPTIONS, check_parameter

__all__ = [
    "ADAPTER_SCALE_LIMIT",
    "PARAMETER_TYPES",
    "Adapter",
    "Modelfile",
    "from_is_path",
    "parse_modelfile",
    "render_modelfile",
]

#: The type of each parameter a ``PARAMETER`` line may set (ranges: ``parameters.OPTIONS``).
PARAMETER_TYPES: dict[str, type] = {
    name: parameter.kind for name, parameter in OPTIONS.items() if parameter.modelfile
}
_REPEATABLE = {"stop"}  # kept as a list; every other parameter keeps its last value
_ROLES = ("system", "user", "assistant")
_INSTRUCTIONS = (
    "from",
    "system",
    "template",
    "parameter",
    "license",
    "message",
    "adapter",
    "draft",
)
_TRIPLE = '"""'
_INT = re.compile(r"[+-]?[0-9]+")
# one way to match each number (no "[0-9]+\.?[0-9]*", which tries every split of a digit run)
_FLOAT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_MAX_NUMBER_TEXT = 64  # characters: no parameter needs more, and float() slows on thousands
_BOOLS = {"true": True, "t": True, "1": True, "false": False, "f": False, "0": False}
_WINDOWS_PATH = re.compile(r"[A-Za-z]:[\\/]")
_WORD = re.compile(r"\s*(\S+)\s*(.*)")
_HEADS = {"parameter": "name", "message": "role"}
ADAPTER_SCALE_LIMIT = 10.0  # an adapter's scale lies in [-limit, limit]


@dataclass(frozen=True)
class Adapter:
    """An ``ADAPTER`` line: the file as written, and the LoRA scale it is applied with."""

    reference: str
    scale: float = 1.0


@dataclass(frozen=True)
class Modelfile:
    """A parsed Modelfile; ``parameters`` holds typed values (``stop`` is a list)."""

    from_: str
    system: str | None = None
    template: str | None = None
    parameters: dict[str, object] = field(default_factory=dict)
    license: list[str] = field(default_factory=list)
    messages: list[tuple[str, str]] = field(default_factory=list)
    adapters: list[Adapter] = field(default_factory=list)
    draft: str | None = None  # a draft model's name or GGUF path (speculative decoding)

    def to_text(self) -> str:
        return render_modelfile(self)


class _Fields(TypedDict, total=False):
    """The :class:`Modelfile` fields that the lines read so far set."""

    from_: str
    system: str
    template: str
    draft: str
    parameters: dict[str, object]
    license: list[str]
    messages: list[tuple[str, str]]
    adapters: list[Adapter]


#: The field each single-value instruction sets (the last line of several wins).
_TEXT_FIELDS: dict[str, Literal["from_", "system", "template", "draft"]] = {
    "from": "from_",
    "system": "system",
    "template": "template",
    "draft": "draft",
}


def from_is_path(value: str) -> bool:
    """Whether a ``FROM`` value names a file or folder (rather than a model in the store)."""
    return (
        value in (".", "..")
        or value.startswith(("./", "../", "/", "~", ".\\", "..\\", "\\"))
        or bool(_WINDOWS_PATH.match(value))
        or value.lower().endswith(".gguf")
    )


def parse_modelfile(text: str) -> Modelfile:
    """Parse Modelfile text, raising :class:`ModelfileError` at the first bad line."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    out: _Fields = {"parameters": {}, "license": [], "messages": [], "adapters": []}
    from_line: int | None = None
    index = 0
    while index < len(lines):
        number, (keyword, rest) = index + 1, _split_word(lines[index])
        if not keyword or keyword.startswith("#"):
            index += 1
            continue
        instruction = keyword.lower()
        if instruction not in _INSTRUCTIONS:
            raise ModelfileError(f"unknown instruction {keyword[:40]!r}", number)
        if instruction == "from" and from_line is not None:
            raise ModelfileError(f"FROM is given twice (first on line {from_line})", number)
        from_line = number if instruction == "from" else from_line
        index = _apply(instruction, rest, lines, index, out)
    if from_line is None:
        raise ModelfileError("a Modelfile needs a FROM line")
    return Modelfile(**out)


def _split_word(text: str) -> tuple[str, str]:
    """The first word of ``text`` and the rest after the whitespace that follows it."""
    match = _WORD.match(text)
    return (match.group(1), match.group(2)) if match else ("", "")


def _apply(instruction: str, rest: str, lines: list[str], index: int, out: _Fields) -> int:
    """Apply one instruction starting on ``lines[index]``; return the index of the next line."""
    number, name, head = index + 1, instruction.upper(), ""
    if instruction in ("parameter", "message"):
        head, rest = _split_word(rest)
        if not head:
            raise ModelfileError(f"{name} needs a {_HEADS[instruction]}", number)
    if instruction == "adapter":
        value, tail, index = _read_value(rest, lines, index, name, tail_ok=True)
        out["adapters"].append(_adapter(value, tail, number))
        return index
    value, _, index = _read_value(rest, lines, index, name)
    if instruction == "parameter":
        _set_parameter(out["parameters"], head.lower(), value, number)
    elif instruction == "message":
        if head.lower() not in _ROLES:
            raise ModelfileError(f"MESSAGE role must be one of {', '.join(_ROLES)}", number)
        out["messages"].append((head.lower(), value))
    elif instruction == "license":
        out["license"].append(value)
    elif instruction in ("from", "draft") and not value:
        raise ModelfileError(f"{name} needs a model name or a file path", number)
    else:
        out[_TEXT_FIELDS[instruction]] = value
    return index


def _read_value(
    text: str, lines: list[str], index: int, name: str, tail_ok: bool = False
) -> tuple[str, str | None, int]:
    """Read a bare, quoted or triple-quoted value that starts with ``text`` on line ``index``;
    returns it, the text after a closing quote (only where ``tail_ok``; None for a bare value)
    and the next index."""
    number = index + 1
    if text.startswith(_TRIPLE):
        return _read_triple(text[3:], lines, index, name, tail_ok)
    if text.startswith('"'):
        return *_read_quoted(text, number, name, tail_ok), index + 1
    if not text.strip():
        raise ModelfileError(f"{name} needs a value", number)
    return text.strip(), None, index + 1


def _read_triple(
    first: str, lines: list[str], index: int, name: str, tail_ok: bool
) -> tuple[str, str | None, int]:
    start = index + 1
    parts, current = [], first
    while (end := current.find(_TRIPLE)) < 0:
        parts.append(current)
        index += 1
        if index >= len(lines):
            raise ModelfileError(f'{name} has an unterminated """ string', start)
        current = lines[index]
    tail = current[end + 3 :].strip()
    if tail and not tail_ok:
        raise ModelfileError(f'unexpected text after the closing """ of {name}', index + 1)
    parts.append(current[:end])
    return "\n".join(parts), tail, index + 1


def _read_quoted(text: str, number: int, name: str, tail_ok: bool) -> tuple[str, str]:
    chars, position = [], 1
    while position < len(text):
        char = text[position]
        if char == "\\" and position + 1 < len(text) and text[position + 1] in '"\\':
            chars.append(text[position + 1])
            position += 2
            continue
        if char == '"':
            tail = text[position + 1 :].strip()
            if tail and not tail_ok:
                raise ModelfileError(f"unexpected text after the closing quote of {name}", number)
            return "".join(chars), tail
        chars.append(char)
        position += 1
    raise ModelfileError(f"{name} has an unterminated quoted string", number)


def _adapter(value: str, tail: str | None, number: int) -> Adapter:
    """``path [scale]``: a bare value's last word is the scale when it is a number; a quoted
    path may be followed by one."""
    if tail is None:
        words = value.rsplit(None, 1)
        bare_scale = len(words) == 2 and _parse_float(words[1]) is not None
        value, tail = (words[0], words[1]) if bare_scale else (value, "")
    if not value.strip():
        raise ModelfileError("ADAPTER needs the path of a LoRA adapter file", number)
    if not tail:
        return Adapter(value)
    scale = _parse_float(tail)
    if scale is None or abs(scale) > ADAPTER_SCALE_LIMIT:
        raise ModelfileError(
            f"ADAPTER scale must be a number from {-ADAPTER_SCALE_LIMIT:g} to "
            f"{ADAPTER_SCALE_LIMIT:g}, got {tail[:40]!r}",
            number,
        )
    return Adapter(value, scale)


def _set_parameter(parameters: dict[str, object], key: str, raw: str, number: int) -> None:
    kind = PARAMETER_TYPES.get(key)
    if kind is None:
        raise ModelfileError(f"unknown parameter {key[:40]!r}", number)
    if kind in (int, float) and len(raw) > _MAX_NUMBER_TEXT:
        raise ModelfileError(
            f"parameter {key} needs {_KIND_NAMES[kind]} of at most {_MAX_NUMBER_TEXT} characters, "
            f"got {len(raw):,}",
            number,
        )
    value = _PARSERS[kind](raw)
    if value is None:
        raise ModelfileError(f"parameter {key} needs {_KIND_NAMES[kind]}, got {raw[:40]!r}", number)
    if key in _REPEATABLE:
        value = [*cast("list[object]", parameters.get(key, [])), value]
    try:
        parameters[key] = check_parameter(key, value)  # the range every other path applies
    except InvalidParameterError as error:
        raise ModelfileError(f"parameter {error}", number) from None


def _parse_int(raw: str) -> int | None:
    if not _INT.fullmatch(raw) or len(raw) > 40:  # int() refuses thousands of digits
        return None
    return int(raw)


def _parse_float(raw: str) -> float | None:
    value = float(raw) if _FLOAT.fullmatch(raw) else None
    return value if value is not None and math.isfinite(value) else None


_PARSERS: dict[type, Callable[[str], object]] = {
    int: _parse_int,
    float: _parse_float,
    bool: lambda raw: _BOOLS.get(raw.lower()),
    str: lambda raw: raw,
}
_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def render_modelfile(modelfile: Modelfile) -> str:
    """Modelfile text that :func:`parse_modelfile` reads back to an equal :class:`Modelfile`."""
    lines = [f"FROM {_quote(modelfile.from_)}"]
    lines += [_adapter_line(adapter) for adapter in modelfile.adapters]
    if modelfile.draft is not None:
        lines.append(f"DRAFT {_quote(modelfile.draft)}")
    if modelfile.template is not None:
        lines.append(f"TEMPLATE {_quote(modelfile.template)}")
    if modelfile.system is not None:
        lines.append(f"SYSTEM {_quote(modelfile.system)}")
    for key, value in modelfile.parameters.items():
        for item in cast("list[object]", value) if key in _REPEATABLE else [value]:
            lines.append(f"PARAMETER {key} {_quote(_format_parameter(item))}")
    lines += [f"MESSAGE {role} {_quote(text)}" for role, text in modelfile.messages]
    lines += [f"LICENSE {_quote(text)}" for text in modelfile.license]
    return "\n".join(lines) + "\n"


def _adapter_line(adapter: Adapter) -> str:
    """Quoted when a bare path could be misread (it holds spaces), the scale when not 1."""
    path = _quote(adapter.reference, plain=not any(c.isspace() for c in adapter.reference))
    return f"ADAPTER {path}" + ("" if adapter.scale == 1.0 else f" {adapter.scale!r}")


def _format_parameter(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _quote(value: str, plain: bool = True) -> str:
    """The plainest spelling of ``value`` that reads back exactly (quoted unless ``plain``)."""
    bare = value and value == value.strip() and "\n" not in value and not value.startswith('"')
    if plain and bare:
        return value
    if "\n" not in value:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if _TRIPLE in value or value.endswith('"') or "\r" in value:
        raise ModelfileError(
            'a multi-line value cannot contain """, a carriage return or end with "'
        )
    return _TRIPLE + value + _TRIPLE
