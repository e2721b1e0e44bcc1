"""The tools on offer: each server's tools under a namespaced name the model sees.

Names from several servers cannot collide: a tool is offered as ``<server>__<tool>`` (folded to
the characters function names allow, at most 64). The description and schema a server gives
are untrusted text: they go to the model as data and to the screen as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCatalog", "ToolSpec", "qualified_name", "required_call_format"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_MAX_NAME = 64
_MAX_DESCRIPTION = 1024


def _fold(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or "x"


def qualified_name(server: str, tool: str) -> str:
    return f"{_fold(server)}__{_fold(tool)}"[:_MAX_NAME]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    server: str
    name: str  # the server's own name for it
    description: str = ""
    schema: Mapping[str, Any] = field(default_factory=dict)
    qualified: str = ""  # the name the model sees (set by the catalog)

    def for_model(self) -> dict[str, Any]:
        """The daemon's ``tools`` entry (the OpenAI function shape)."""
        schema = dict(self.schema) if self.schema else {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {
                "name": self.qualified,
                "description": self.description[:_MAX_DESCRIPTION],
                "parameters": schema,
            },
        }


class ToolCatalog:
    """Every enabled server's tools by qualified name; a clash gets a numbered suffix."""

    def __init__(self, tools: Iterable[ToolSpec] = ()):
        self._by_name: dict[str, ToolSpec] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: ToolSpec) -> ToolSpec:
        base = qualified_name(tool.server, tool.name)
        name, number = base, 2
        while name in self._by_name:
            suffix = f"_{number}"
            name, number = base[: _MAX_NAME - len(suffix)] + suffix, number + 1
        named = ToolSpec(tool.server, tool.name, tool.description, tool.schema, name)
        self._by_name[name] = named
        return named

    def get(self, qualified: str) -> ToolSpec | None:
        return self._by_name.get(qualified)

    def __iter__(self):
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def for_model(self) -> list[dict[str, Any]]:
        return [tool.for_model() for tool in self]


def required_call_format(catalog: ToolCatalog) -> dict[str, Any] | None:
    """A JSON schema (the native route's ``format``) whose only answers are one call of one of
    the tools: the daemon's grammar then makes the model call a tool, and its tool-call parser
    reports the call. None when there are no tools."""
    options = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool.qualified},
                "arguments": dict(tool.schema) or {"type": "object"},
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in catalog
    ]
    if not options:
        return None
    return options[0] if len(options) == 1 else {"oneOf": options}
