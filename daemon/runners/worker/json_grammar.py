"""JSON schema -> GBNF grammar whose every output is JSON a strict parser accepts.

llama-cpp-python's converter lets a string hold any character but a quote or a backslash, so a
sampled raw newline or other control character gave ``format: "json"`` answers that
``json.loads`` rejects ("Invalid control character"). Here a string character is what RFC 8259
allows: anything but ``"``, ``\\`` and U+0000-U+001F (and DEL, as llama.cpp's own converter
does), or an escape (``\\n``, ``\\u00e9``...). A pattern's ``.`` inside a string is the same
set, so a pattern cannot close the string early or put a control character in it either.
"""

from __future__ import annotations

import json

from llama_cpp.llama_grammar import DOT, BuiltinRule, SchemaConverter

__all__ = ["schema_grammar"]

_HEX = "[0-9a-fA-F]"
STRING_CHAR = BuiltinRule(
    r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ' + " ".join([_HEX] * 4) + ")", []
)
_PATTERN_DOT = r'[^"\\\x7F\x00-\x1F]'


# llama_cpp.llama_grammar is untyped: its SchemaConverter's methods take and return plain
# values without annotations (hence the ``no-untyped-call`` ignores below).


class _StrictJsonConverter(SchemaConverter):
    """The library's converter with JSON's own string characters."""

    def _add_primitive(self, name: str, rule: BuiltinRule) -> str:
        char = STRING_CHAR if name == "char" else rule
        added: str = super()._add_primitive(name, char)
        return added

    def _add_rule(self, name: str, rule: str) -> str:
        dot = _PATTERN_DOT if name == "dot" and rule == DOT else rule
        added: str = super()._add_rule(name, dot)  # type: ignore[no-untyped-call]
        return added


def schema_grammar(schema_text: str) -> str:
    """The GBNF grammar (root rule ``root``) for the JSON schema in ``schema_text``."""
    converter = _StrictJsonConverter(  # type: ignore[no-untyped-call]
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    schema = converter.resolve_refs(json.loads(schema_text), "stdin")
    converter.visit(schema, "")  # type: ignore[no-untyped-call]
    grammar: str = converter.format_grammar()  # type: ignore[no-untyped-call]
    return grammar
