"""Anthropic Messages requests -> inference jobs (the answers go back through ``answers``).

A conversation becomes the messages the chat templates read (OpenAI's shape): ``system`` a
system message, and so is a ``system`` message anywhere in ``messages`` (instructions that
changed mid-conversation); ``tool_use`` blocks an assistant's ``tool_calls``; ``tool_result``
blocks ``tool`` messages (named after their call); ``thinking`` blocks the assistant's
``reasoning_content`` (templates that show earlier reasoning read it); ``image`` blocks image
parts, their base64 images the job's ``images``. An image given by URL is refused, never
fetched (the daemon downloading whatever a request names would be a server-side request
forgery hole).

Tools: a tool with ``defer_loading`` stays hidden until a ``tool_reference`` block in a tool
result names it (Claude Code's tool search); Anthropic's server tools (``web_search_...``,
``code_execution_...``) are left out, with a warning in the request log, since localllm runs
none. ``thinking`` is a wish, not a demand: a model that cannot think answers without it, as
on Anthropic's API (``adaptive`` lets the model decide); its ``display`` is not needed, the
thinking streams either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from localllm.daemon.api.anthropic import (
    CountTokensRequest,
    MessageParam,
    MessagesRequest,
    ToolParam,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import GenerationJob
from localllm.daemon.inference.images import decode_base64
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.inference.templates import image_part
from localllm.daemon.inference.tool_calls import ToolChoice

__all__ = ["count_job", "messages_job"]

_THINKING = ("thinking", "redacted_thinking")


class _Function(TypedDict):
    name: str
    arguments: dict[str, object]


class _ToolCall(TypedDict):
    """A ``tool_use`` block as an assistant message's tool call (OpenAI's shape)."""

    id: str
    type: Literal["function"]
    function: _Function


def messages_job(req: MessagesRequest) -> GenerationJob:
    sampling = {
        "num_predict": req.max_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "top_k": req.top_k,
        "stop": req.stop_sequences,
    }
    sampling = {k: v for k, v in sampling.items() if v is not None}
    return _job(req, sampling, _output_schema(req.output_config))


def count_job(req: CountTokensRequest) -> GenerationJob:
    """The job whose prompt ``count_tokens`` counts: exactly the one ``messages_job`` renders."""
    return _job(req, {}, None)


def _job(
    req: CountTokensRequest, sampling: Mapping[str, object], schema: Mapping[str, object] | None
) -> GenerationJob:
    images: list[bytes] = []
    loaded: set[str] = set()  # deferred tools a tool_reference block named
    messages = _conversation(req.system, req.messages, images, loaded)
    warnings: list[str] = []
    tools = _tools(req.tools or (), loaded, warnings)
    think, budget = _thinking(req.thinking)
    return GenerationJob(
        model=req.model,
        messages=messages,
        images=images,
        options={**(req.options or {}), **sampling},
        tools=tools,
        tool_choice=_tool_choice(req.tool_choice, bool(tools)),
        json_schema=schema,
        keep_alive=parse_keep_alive(req.keep_alive),
        think=think,
        think_budget=budget,
        think_optional=True,
        warnings=warnings,
    )


# -- the conversation -----------------------------------------------------------------------
def _conversation(
    system: str | Sequence[Mapping[str, object]] | None,
    messages: Sequence[MessageParam],
    images: list[bytes],
    loaded: set[str],
) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    if system:
        out.append({"role": "system", "content": _system_text(system, "system")})
    tool_names: dict[str, str] = {}  # tool_use id -> name, for the results that answer them
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        if message.role == "system":
            out.append({"role": "system", "content": _system_text(message.content, where)})
        elif isinstance(message.content, str):
            out.append({"role": message.role, "content": message.content})
        elif message.role == "assistant":
            out.append(_assistant(message.content, where, tool_names))
        else:
            out.extend(_user(message.content, where, images, tool_names, loaded))
    return out


def _system_text(system: str | Sequence[Mapping[str, object]], where: str) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(_text(block, f"{where}.content[{i}]") for i, block in enumerate(system))


def _assistant(
    blocks: Sequence[Mapping[str, object]], where: str, tool_names: dict[str, str]
) -> dict[str, object]:
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[_ToolCall] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}.content[{i}]"
        if kind == "text":
            texts.append(_text(block, at))
        elif kind in _THINKING:
            thoughts.append(str(block.get("thinking") or ""))  # redacted ones carry none
        elif kind == "tool_use":
            calls.append(_tool_call(block, at))
            tool_names[calls[-1]["id"]] = calls[-1]["function"]["name"]
        else:
            raise _unsupported(kind, at, "text, thinking and tool_use")
    message: dict[str, object] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    if any(thoughts):
        message["reasoning_content"] = "".join(thoughts)
    return message


def _user(
    blocks: Sequence[Mapping[str, object]],
    where: str,
    images: list[bytes],
    tool_names: Mapping[str, str],
    loaded: set[str],
) -> list[dict[str, object]]:
    """Tool results (each a ``tool`` message), then the user's own text and images."""
    results: list[dict[str, object]] = []
    parts: list[dict[str, object]] = []
    for i, block in enumerate(blocks):
        kind, at = block.get("type"), f"{where}.content[{i}]"
        if kind == "tool_result":
            results.append(_tool_result(block, at, images, tool_names, loaded))
        elif kind in ("text", "image"):
            parts.append(_part(block, at, images))
        else:
            raise _unsupported(kind, at, "text, image and tool_result")
    return [*results, {"role": "user", "content": parts}] if parts else results


def _part(block: Mapping[str, object], at: str, images: list[bytes]) -> dict[str, object]:
    if block.get("type") == "text":
        return {"type": "text", "text": _text(block, at)}
    images.append(_image(block.get("source"), len(images) + 1, at))
    return image_part(len(images) - 1)


def _tool_result(
    block: Mapping[str, object],
    at: str,
    images: list[bytes],
    tool_names: Mapping[str, str],
    loaded: set[str],
) -> dict[str, object]:
    call_id = _string(block, "tool_use_id", at)
    content = block.get("content", "")
    if isinstance(content, list):
        content = [
            _result_part(part, f"{at}.content[{i}]", images, loaded)
            for i, part in enumerate(content)
        ]
    elif not isinstance(content, str):
        raise BadRequestError(f"{at}.content must be a string or a list of blocks", "messages")
    name = tool_names.get(call_id)
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def _result_part(part: object, at: str, images: list[bytes], loaded: set[str]) -> dict[str, object]:
    allowed = "text, image and tool_reference"
    if not isinstance(part, Mapping):
        raise _unsupported(None, at, allowed)
    kind = part.get("type")
    if kind == "tool_reference":  # a tool search found this deferred tool: it is offered now
        name = _string(part, "tool_name", at)
        loaded.add(name)
        return {"type": "text", "text": f"Tool {name} is loaded."}
    if kind not in ("text", "image"):
        raise _unsupported(kind, at, allowed)
    return _part(part, at, images)


def _image(source: object, number: int, at: str) -> bytes:
    kind = source.get("type") if isinstance(source, Mapping) else None
    data = source.get("data") if isinstance(source, Mapping) else None
    if kind == "base64" and isinstance(data, str):
        return decode_base64(data, number, f" ({at})", param="messages")
    refused = (
        f"source type {kind!r} is not supported (localllm never downloads images); " if kind else ""
    )
    raise BadRequestError(
        f'{at}: {refused}send the image as source {{"type": "base64", "data": ...}}',
        param="messages",
    )


def _tool_call(block: Mapping[str, object], at: str) -> _ToolCall:
    arguments = block.get("input", {})
    if not isinstance(arguments, Mapping):
        raise BadRequestError(f"{at}.input must be an object", param="messages")
    name = _string(block, "name", at)
    return {
        "id": _string(block, "id", at),
        "type": "function",
        "function": {"name": name, "arguments": dict(arguments)},
    }


def _text(block: Mapping[str, object], at: str) -> str:
    if block.get("type") != "text":
        raise _unsupported(block.get("type"), at, "text")
    return _string(block, "text", at)


def _string(block: Mapping[str, object], key: str, at: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise BadRequestError(f"{at}.{key} must be a string", param="messages")
    return value


def _unsupported(kind: object, at: str, allowed: str) -> BadRequestError:
    return BadRequestError(
        f"{at}: content block type {kind!r} is not supported here (only {allowed})",
        param="messages",
    )


# -- tools and thinking ---------------------------------------------------------------------
def _tools(
    tools: Sequence[ToolParam], loaded: set[str], warnings: list[str]
) -> list[dict[str, object]]:
    """The client tools the model is offered; server tools are left out, with a warning."""
    offered: list[dict[str, object]] = []
    for number, tool in enumerate(tools):
        if tool.type not in (None, "custom"):
            warnings.append(
                f"tools[{number}]: server tool {tool.name!r} ({tool.type}) left out: "
                "localllm runs no server tools"
            )
        elif not tool.defer_loading or tool.name in loaded:
            offered.append(_tool(tool))
    return offered


def _tool(tool: ToolParam) -> dict[str, object]:
    """A client tool as the templates read tools (OpenAI's function shape)."""
    if tool.input_schema is None:
        raise BadRequestError(f"tool {tool.name!r} needs an input_schema", param="tools")
    function = {"name": tool.name, "description": tool.description, "parameters": tool.input_schema}
    return {"type": "function", "function": {k: v for k, v in function.items() if v is not None}}


def _tool_choice(choice: Mapping[str, object] | None, has_tools: bool) -> ToolChoice:
    given: Mapping[str, object] = choice or {}
    kind, name = given.get("type", "auto" if has_tools else "none"), given.get("name")
    if kind == "tool" and isinstance(name, str):
        return ToolChoice("function", name)
    modes = {"auto": "auto", "any": "required", "none": "none"}
    if not isinstance(kind, str) or kind not in modes:  # a list or an object is no mode
        raise BadRequestError(
            'tool_choice must be {"type": "auto"}, {"type": "any"}, {"type": "none"} or '
            '{"type": "tool", "name": ...}',
            param="tool_choice",
        )
    return ToolChoice(modes[kind])  # a forced call without tools is inference's 400


def _thinking(thinking: Mapping[str, object] | None) -> tuple[bool | None, int | None]:
    if thinking is None:
        return None, None
    kind, budget = thinking.get("type"), thinking.get("budget_tokens")
    if kind == "disabled":
        return False, None
    if kind == "adaptive" and budget is None:
        return True, None
    if (
        kind == "enabled"
        and isinstance(budget, int)
        and not isinstance(budget, bool)
        and budget > 0
    ):
        return True, budget
    raise BadRequestError(
        'thinking must be {"type": "enabled", "budget_tokens": N} (N > 0), '
        '{"type": "adaptive"} or {"type": "disabled"}',
        param="thinking",
    )


def _output_schema(config: Mapping[str, object] | None) -> Mapping[str, object] | None:
    """Structured outputs: ``output_config.format`` is a JSON schema the answer must match."""
    fmt = (config or {}).get("format")
    if fmt is None:
        return None
    schema = fmt.get("schema") if isinstance(fmt, Mapping) else None
    if (
        not isinstance(fmt, Mapping)
        or fmt.get("type") != "json_schema"
        or not isinstance(schema, Mapping)
    ):
        raise BadRequestError(
            'output_config.format must be {"type": "json_schema", "schema": {...}}',
            param="output_config",
        )
    return schema
