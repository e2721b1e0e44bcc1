"""Tool calls: the schema that forces one, the prompt that describes tools, and the parser.

``tool_choice`` "required" or a named function is enforced by grammar: the model must write
``{"name": ..., "arguments": {...}}`` matching the tool's parameter schema. With "auto" the
template describes the tools (or, for templates that know nothing of tools, a Hermes-style
system prompt does) and the output is parsed: ``<tool_call>{...}</tool_call>`` blocks
(Hermes, Qwen) or a bare JSON object / list of objects with ``name`` and ``arguments``.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from daemon.errors import BadRequestError

__all__ = [
    "ToolCall",
    "ToolCallFilter",
    "ToolChoice",
    "forced_tool_schema",
    "parse_tool_calls",
    "tools_system_prompt",
]

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as OpenAI sends it

    @classmethod
    def new(cls, name: str, arguments: object) -> ToolCall:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(f"call_{secrets.token_hex(12)}", name, text)

    def arguments_object(self) -> dict[str, object]:
        """The arguments as an object, as Ollama's and Anthropic's APIs send them."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {"value": value}


@dataclass(frozen=True, slots=True)
class ToolChoice:
    mode: str = "auto"  # "auto", "none", "required" or "function"
    name: str | None = None  # the function, for mode "function"

    @property
    def forced(self) -> bool:
        return self.mode in ("required", "function")


def _function(tool: Mapping[str, object]) -> Mapping[str, object]:
    function = tool.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise BadRequestError("each tool needs a function with a name", param="tools")
    return function


def forced_tool_schema(tools: Sequence[Mapping[str, object]], choice: ToolChoice) -> dict:
    """The JSON schema a forced tool call must match: one named tool, or any one of them."""
    functions = [_function(tool) for tool in tools]
    if choice.mode == "function":
        functions = [f for f in functions if f["name"] == choice.name]
        if not functions:
            raise BadRequestError(
                f"tool_choice names {choice.name!r}, not among the tools", "tool_choice"
            )
    options = [_call_schema(f) for f in functions]
    return options[0] if len(options) == 1 else {"oneOf": options}


def _call_schema(function: Mapping[str, object]) -> dict:
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return {
        "type": "object",
        "properties": {"name": {"const": function["name"]}, "arguments": parameters},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def tools_system_prompt(tools: Sequence[Mapping[str, object]]) -> str:
    """A Hermes-style tool description for templates that do not render ``tools`` themselves."""
    described = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return (
        "You may call one or more functions to assist with the user query. The functions are "
        f"described in JSON within <tools></tools>:\n<tools>\n{described}\n</tools>\n"
        "To call a function, reply with a JSON object with its name and arguments within "
        '<tool_call></tool_call> tags:\n<tool_call>\n{"name": <function-name>, '
        '"arguments": <args-json-object>}\n</tool_call>'
    )


def parse_tool_calls(text: str, names: Sequence[str] | None = None) -> list[ToolCall]:
    """Tool calls found in a model's output (empty when it is plain text)."""
    stripped = text.strip()
    candidates: list[object] = []
    if _OPEN in stripped:
        candidates = [_loads(block) for block in _BLOCK.findall(stripped)]
    elif stripped[:1] in "{[":
        value = _loads(stripped)
        candidates = value if isinstance(value, list) else [value]
    calls = [_as_call(c, names) for c in candidates]
    return [] if not calls or None in calls else calls


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _as_call(value: object, names: Sequence[str] | None) -> ToolCall | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if names is not None and value["name"] not in names:
        return None
    if isinstance(arguments, str):
        arguments = _loads(arguments)
    return None if not isinstance(arguments, Mapping) else ToolCall.new(value["name"], arguments)


class ToolCallFilter:
    """Streams text through, holding back output that may turn out to be a tool call.

    Text that starts like a call (``<tool_call>``, ``{`` or ``[``) is held to the end and then
    parsed; anything else is passed on as soon as it is clearly not a call. With ``hold_all``
    (a grammar-forced call) everything is held.
    """

    def __init__(self, names: Sequence[str] | None, hold_all: bool = False):
        self._names = names
        self._held = ""
        self._passing = False
        self._hold_all = hold_all  # a grammar-forced call: nothing is content

    def feed(self, text: str) -> str:
        """The part of ``text`` that is content and can be sent now."""
        if self._passing:
            return text
        self._held += text
        head = self._held.lstrip()
        if self._hold_all or not head or head[0] in "{[" or _OPEN.startswith(head[: len(_OPEN)]):
            return ""
        self._passing = True
        held, self._held = self._held, ""
        return held

    def finish(self) -> tuple[str, list[ToolCall]]:
        """At the end: (content still held back, tool calls)."""
        held, self._held = self._held, ""
        calls = parse_tool_calls(held, self._names) if held else []
        return ("", calls) if calls else (held, [])
