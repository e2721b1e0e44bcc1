"""Tool calls: what one is, the schema that forces one, and the prompt that describes tools.

``tool_choice`` "required" or a named function is enforced by grammar: the model must write
``{"name": ..., "arguments": {...}}`` matching the tool's parameter schema (a list of such
objects for "required" with ``parallel_tool_calls``). With "auto" the template describes the
tools (or, for templates that know nothing of tools, a Hermes-style system prompt does) and
``tool_call_parser`` finds the calls in the output as it streams.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from localllm.daemon.errors import BadRequestError

__all__ = [
    "ToolCall",
    "ToolCallDelta",
    "ToolChoice",
    "forced_tool_schema",
    "new_call_id",
    "tools_system_prompt",
    "with_tool_prompt",
]


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it, as OpenAI sends it


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """The next piece of a tool call as it streams: parallel calls count from index 0, one
    after the other (once call n+1 begins, call n is complete). A call's first piece carries
    its id and name and no arguments; the next ones carry parts of its arguments text, which
    together are exactly the arguments of the call in ``Finished.tool_calls``."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""  # the next part of the call's JSON arguments text


@dataclass(frozen=True, slots=True)
class ToolChoice:
    mode: str = "auto"  # "auto", "none", "required" or "function"
    name: str | None = None  # the function, for mode "function"
    parallel: bool = False  # "required" may make several calls at once (a list of them)

    @property
    def forced(self) -> bool:
        return self.mode in ("required", "function")


def _function(tool: Mapping[str, object]) -> Mapping[str, object]:
    function = tool.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise BadRequestError("each tool needs a function with a name", param="tools")
    return function


def forced_tool_schema(
    tools: Sequence[Mapping[str, object]], choice: ToolChoice
) -> dict[str, object]:
    """The JSON schema a forced tool call must match: one named tool, or any one of them (or,
    for "required" with ``parallel``, a list of one or more such calls)."""
    functions = [_function(tool) for tool in tools]
    if choice.mode == "function":
        functions = [f for f in functions if f["name"] == choice.name]
        if not functions:
            raise BadRequestError(
                f"tool_choice names {choice.name!r}, not among the tools", "tool_choice"
            )
    options = [_call_schema(f) for f in functions]
    call: dict[str, object] = options[0] if len(options) == 1 else {"oneOf": options}
    if choice.mode == "required" and choice.parallel:
        return {"type": "array", "items": call, "minItems": 1}
    return call


def _call_schema(function: Mapping[str, object]) -> dict[str, object]:
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


def with_tool_prompt(
    conversation: Sequence[Mapping[str, object]], tools: Sequence[Mapping[str, object]]
) -> list[Mapping[str, object]]:
    """Describe the tools in the system message, for templates that cannot."""
    prompt = tools_system_prompt(tools)
    if conversation and conversation[0].get("role") == "system":
        first = dict(conversation[0], content=f"{conversation[0].get('content', '')}\n\n{prompt}")
        return [first, *conversation[1:]]
    return [{"role": "system", "content": prompt}, *conversation]
