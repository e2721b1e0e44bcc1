"""Bounds on a JSON schema before a runner turns it into a grammar.

llama-cpp-python's converter writes a copy of an item's rule per repetition, inlines literal
repetitions of a pattern (``(ab{1000}){1000}`` is a million characters), builds a rule per
suffix of an object's optional properties (quadratic, and recursive: a thousand of them
overflow Python's stack), and does it all in the runner's only loop. An 80-byte schema
(``{"type": "array", "minItems": 200000000}``) asked for 200 million copies; 2 million gave a
28 MiB grammar while every other sequence of that runner waited. So the schema is measured
first, here, in a worker thread: every repetition count at most ``MAX_REPEAT`` (the converter
nests ``maxLength: 2000`` 2,000 groups deep, which llama.cpp's parser refuses), nesting at
most ``MAX_DEPTH`` levels, at most ``MAX_OPTIONAL`` optional properties in an object, and the
grammar it makes, estimated, at most ``MAX_GRAMMAR`` characters. Going over is a 400 that
names the limit and where in the schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from localllm.daemon.errors import BadRequestError

__all__ = ["MAX_DEPTH", "MAX_GRAMMAR", "MAX_OPTIONAL", "MAX_REPEAT", "check_schema_bounds"]

MAX_REPEAT = 1000
MAX_DEPTH = 64
MAX_OPTIONAL = 200
MAX_GRAMMAR = 1 << 20  # characters of GBNF, estimated
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength")
_RULE = 24  # characters a rule, or a reference to one, takes in the grammar (about)


class _Measure:
    def __init__(self, what: str, param: str):
        self.what, self.param = what, param
        self.size = 0

    def fail(self, where: str, problem: str) -> BadRequestError:
        at = f" at {where}" if where else ""
        return BadRequestError(f"{self.what}{at} {problem}", param=self.param)

    def add(self, characters: int, where: str) -> None:
        self.size += characters
        if self.size > MAX_GRAMMAR:
            raise self.fail(
                where,
                f"makes a grammar of more than {MAX_GRAMMAR:,} characters; ask for fewer or "
                "shorter repetitions, properties or choices",
            )


def check_schema_bounds(schema: object, what: str, param: str) -> None:
    """Refuse ``schema`` (a 400 for ``param``, described as ``what``) when the grammar it makes
    would be too big to build; otherwise do nothing."""
    measure = _Measure(what, param)
    pending: list[tuple[object, str, int]] = [(schema, "", 0)]
    while pending:
        node, where, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise measure.fail(where, f"nests more than {MAX_DEPTH} levels deep")
        children: Iterable[tuple[object, object]]
        if isinstance(node, Mapping):
            _check_node(node, where, measure)
            children = node.items()
        elif isinstance(node, list):
            children = ((f"{n}", value) for n, value in enumerate(node))
        else:
            continue
        for key, value in children:
            if isinstance(value, Mapping | list):
                pending.append((value, f"{where}.{key}" if where else str(key), depth + 1))


def _check_node(node: Mapping[str, object], where: str, measure: _Measure) -> None:
    measure.add(_RULE, where)
    for key in _COUNTS:
        if key in node:
            measure.add(_RULE * _count(node[key], f"{where}.{key}".lstrip("."), measure), where)
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        required = node.get("required")
        required = set(required) if isinstance(required, list) else set()
        optional = sum(1 for name in properties if name not in required)
        if optional > MAX_OPTIONAL:
            raise measure.fail(
                where,
                f"has {optional:,} optional properties in one object; at most {MAX_OPTIONAL} "
                "(make more of them required, or nest them)",
            )
        measure.add(_RULE * (len(properties) + optional * (optional + 1) // 2), where)
    for key in ("enum", "const"):
        if key in node:
            measure.add(len(json.dumps(node[key], default=str)), where)
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        measure.add(_pattern_size(pattern, f"{where}.pattern".lstrip("."), measure), where)


def _count(value: object, where: str, measure: _Measure) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPEAT:
        shown = value if isinstance(value, str) else json.dumps(value, default=str)[:40]
        raise measure.fail(
            where, f"is {shown}; a repetition count must be an integer from 0 to {MAX_REPEAT:,}"
        )
    return value


def _number(digits: str) -> int | str:
    """The number, or the text when it is too long to be a count anyone means."""
    return int(digits) if len(digits) <= 9 else digits[:12] + "..."


def _pattern_size(pattern: str, where: str, measure: _Measure) -> int:
    """The characters the pattern's grammar takes, with each repeated part written out as many
    times as it may repeat (as the converter writes literals), nested groups multiplied."""
    sizes: list[int] = [0]  # the size so far of each open group, innermost last
    last = 0  # the size of the atom just read (what a quantifier repeats)
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "(":
            sizes.append(0)
            last = 0
        elif char == ")" and len(sizes) > 1:
            last = sizes.pop() + 2
            sizes[-1] += last
        elif char == "{" and (end := pattern.find("}", i)) > 0:
            numbers = [n.strip() for n in pattern[i + 1 : end].split(",")]
            counts = [_count(_number(n), where, measure) for n in numbers if n.isdigit()]
            sizes[-1] += last * (max(counts, default=1) - 1)
            i = end
        elif char == "[":
            end = pattern.find("]", i + 2)
            last = (end if end > 0 else len(pattern)) - i + 1
            sizes[-1] += last
            i = end if end > 0 else len(pattern)
        elif char == "\\":
            last = 2
            sizes[-1] += last
            i += 1
        else:
            last = 1
            sizes[-1] += 1
        if sizes[-1] > MAX_GRAMMAR:
            break
        i += 1
    return sum(sizes)
