"""A Responses API request -> one ``GenerationJob``, its conversation in the shape chat
templates read (as chat completions' messages become, see ``translate``).

``input`` items become messages: ``message`` items as they are (``developer`` is ``system``),
``function_call`` items the assistant's ``tool_calls`` (consecutive calls in one message),
``function_call_output`` items ``tool`` messages, and a ``reasoning`` item the ``thinking``
of the assistant message after it. ``instructions`` are the system message, for this request
only: a follow-up (``previous_response_id``) starts from the stored conversation without them,
as OpenAI does. Images are ``input_image`` parts holding ``data:`` URLs, never fetched.

Tools: ``function`` tools as they are; a ``namespace`` tool's function tools join them (the
model sees one flat list; a call of one names its namespace, as OpenAI's do); hosted tools
(``web_search``, ``file_search``, ``code_interpreter``...) are left out with a warning in the
request log, since localllm runs none. ``reasoning`` is a wish: a model that cannot think
answers without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from localllm.daemon.api.openai_responses import (
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionToolIn,
    InputMessage,
    NamespaceToolIn,
    ReasoningItem,
    ResponsesRequest,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import GenerationJob
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.inference.templates import image_part
from localllm.daemon.inference.tool_calls import ToolChoice
from localllm.daemon.server.openai.response_store import StoredResponse
from localllm.daemon.server.openai.translate import image_from_url, sampling_options

__all__ = ["Turn", "responses_turn"]

M = TypeVar("M", bound=BaseModel)
_ITEMS = "message, function_call, function_call_output and reasoning"
MAX_INPUT_ITEMS = 10_000  # a long coding-agent session holds a few thousand
# reasoning.effort as think: the efforts not named here are taken as they are
_EFFORTS: Mapping[str, bool | str] = {"none": False, "minimal": "low", "xhigh": "high"}
_CLIENT_TOOLS = ("custom",)  # tools the client would run, which we cannot offer as functions


@dataclass(frozen=True, slots=True)
class Turn:
    job: GenerationJob
    history: list[dict[str, object]]  # the conversation without the instructions
    tools: list[dict[str, object]]  # the function and namespace tools, as the response echoes them
    namespaces: Mapping[str, str] = field(default_factory=dict)  # function -> its namespace


def responses_turn(req: ResponsesRequest, previous: StoredResponse | None) -> Turn:
    """The job for ``req``, continuing ``previous`` (its conversation and images) if given."""
    _refuse_unsupported(req)
    images = list(previous.images) if previous else []
    history = [dict(m) for m in previous.messages] if previous else []
    history += _Transcript(images).messages(req.input)
    if not history:
        raise BadRequestError("input is empty: send text or at least one item", param="input")
    system: list[dict[str, object]] = (
        [{"role": "system", "content": req.instructions}] if req.instructions else []
    )
    offered = _Tools(req.tools or ())
    tools = [_chat_tool(tool) for tool in offered.functions]
    job = GenerationJob(
        model=req.model,
        messages=system + history,
        images=images,
        options=sampling_options(req, req.max_output_tokens),
        tools=tools,
        tool_choice=_tool_choice(req.tool_choice, bool(tools)),
        json_schema=_schema(req),
        keep_alive=parse_keep_alive(req.keep_alive),
        think=_think(req),
        think_optional=True,
        warnings=offered.warnings,
    )
    return Turn(job, history, offered.echoed, offered.namespaces)


def _refuse_unsupported(req: ResponsesRequest) -> None:
    if req.background:
        raise BadRequestError("background responses are not supported", param="background")
    if req.conversation is not None:
        raise BadRequestError(
            "conversations are not supported; chain responses with previous_response_id",
            param="conversation",
        )


def _think(req: ResponsesRequest) -> bool | str | None:
    effort = req.reasoning.effort if req.reasoning else None
    return None if effort is None else _EFFORTS.get(effort, effort)


def _schema(req: ResponsesRequest) -> Mapping[str, object] | None:
    fmt = req.text.format if req.text else None
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return {"type": "object"}
    if fmt.schema_ is None:
        raise BadRequestError("text.format json_schema needs a schema", param="text.format")
    return fmt.schema_


class _Tools:
    """A request's tools: the functions the model is offered (namespaces flattened), what the
    response echoes, each namespaced function's namespace, and what was left out."""

    def __init__(self, tools: Sequence[Mapping[str, object]]):
        self.functions: list[dict[str, Any]] = []
        self.echoed: list[dict[str, object]] = []
        self.namespaces: dict[str, str] = {}
        self.warnings: list[str] = []
        self._names: set[str] = set()
        for number, tool in enumerate(tools):
            self._add(tool, f"tools[{number}]")

    def _add(self, tool: Mapping[str, object], where: str) -> None:
        kind = tool.get("type")
        if kind == "function":
            self.echoed.append(self._function(tool, where, None))
        elif kind == "namespace":
            self.echoed.append(self._namespace(_valid(NamespaceToolIn, tool, where), where))
        elif kind in _CLIENT_TOOLS or not isinstance(kind, str):
            raise BadRequestError(
                f"tool type {kind!r} is not supported; function and namespace tools are ({where})",
                param="tools",
            )
        else:
            self.warnings.append(
                f"{where}: hosted tool {kind!r} left out: localllm runs no hosted tools"
            )

    def _namespace(self, space: NamespaceToolIn, where: str) -> dict[str, object]:
        inner = [
            self._function(tool, f"{where}.tools[{i}]", space.name)
            for i, tool in enumerate(space.tools)
        ]
        return {**space.model_dump(exclude_none=True), "tools": inner}

    def _function(
        self, tool: Mapping[str, object], where: str, namespace: str | None
    ) -> dict[str, Any]:
        if tool.get("type") != "function":
            raise BadRequestError(
                f"{where}: tool type {tool.get('type')!r} is not supported in a namespace; "
                "only function tools are",
                param="tools",
            )
        function = _valid(FunctionToolIn, tool, where).model_dump()
        if function["name"] in self._names:
            raise BadRequestError(
                f"{where}: tool name {function['name']!r} is given twice; the model sees one "
                "list of functions, namespaces included",
                param="tools",
            )
        self.functions.append(function)
        self._names.add(function["name"])
        if namespace is not None:
            self.namespaces[function["name"]] = namespace
        return function


def _chat_tool(tool: Mapping[str, object]) -> dict[str, object]:
    """A flat Responses tool in the chat shape templates and the tool-call grammar read."""
    function = {k: tool[k] for k in ("name", "description", "parameters") if tool.get(k)}
    return {"type": "function", "function": function}


def _tool_choice(value: str | Mapping[str, object] | None, has_tools: bool) -> ToolChoice:
    if value is None:
        return ToolChoice("auto" if has_tools else "none")
    if isinstance(value, str):
        return ToolChoice(value)
    name = value.get("name")
    if value.get("type") != "function" or not isinstance(name, str):
        raise BadRequestError(
            'tool_choice must be "none", "auto", "required" or {"type": "function", "name": ...}',
            param="tool_choice",
        )
    return ToolChoice("function", name)


def _valid(model: type[M], value: Mapping[str, object], where: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise BadRequestError(
            f"{where}.{field}: {first['msg']}", param=f"{where}.{field}"
        ) from None


class _Transcript:
    """Builds the template messages from ``input``, collecting images into ``images``."""

    def __init__(self, images: list[bytes]):
        self._images = images
        self._out: list[dict[str, object]] = []
        self._thinking: list[str] = []  # from reasoning items, for the next assistant message
        self._call_names: dict[str, str] = {}

    def messages(self, given: str | Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
        if isinstance(given, str):
            return [{"role": "user", "content": given}]
        if len(given) > MAX_INPUT_ITEMS:
            raise BadRequestError(
                f"input has {len(given):,} items; at most {MAX_INPUT_ITEMS:,} are taken (chain "
                "long conversations with previous_response_id)",
                param="input",
            )
        for number, item in enumerate(given):
            self._add(item, f"input[{number}]")
        return self._out

    def _add(self, item: Mapping[str, object], where: str) -> None:
        kind = item.get("type", "message")
        if kind == "message":
            self._message(_valid(InputMessage, item, where), where)
        elif kind == "function_call":
            self._call(_valid(FunctionCallItem, item, where))
        elif kind == "function_call_output":
            self._call_output(_valid(FunctionCallOutputItem, item, where), where)
        elif kind == "reasoning":
            text = _reasoning_text(_valid(ReasoningItem, item, where))
            self._thinking += [text] if text else []
        else:
            raise BadRequestError(
                f"{where}: input item type {kind!r} is not supported ({_ITEMS} are)",
                param="input",
            )

    def _message(self, item: InputMessage, where: str) -> None:
        role = "system" if item.role == "developer" else item.role
        content = item.content
        if isinstance(content, list):
            content = [self._part(part, where) for part in content]
        message: dict[str, object] = {"role": role, "content": content}
        if role == "assistant":
            self._take_thinking(message)
        self._out.append(message)

    def _call(self, item: FunctionCallItem) -> None:
        self._call_names[item.call_id] = item.name
        call = {
            "id": item.call_id,
            "type": "function",
            "function": {"name": item.name, "arguments": item.arguments},
        }
        last = self._out[-1] if self._out else {}
        if last.get("role") == "assistant" and not self._thinking:
            calls = last.get("tool_calls")
            if isinstance(calls, list):
                calls.append(call)
            else:
                last["tool_calls"] = [call]
            return
        message: dict[str, object] = {"role": "assistant", "content": "", "tool_calls": [call]}
        self._take_thinking(message)
        self._out.append(message)

    def _call_output(self, item: FunctionCallOutputItem, where: str) -> None:
        output = item.output
        content = output if isinstance(output, str) else [self._part(p, where) for p in output]
        message: dict[str, object] = {"role": "tool", "tool_call_id": item.call_id}
        if item.call_id in self._call_names:
            message["name"] = self._call_names[item.call_id]
        self._out.append({**message, "content": content})

    def _take_thinking(self, message: dict[str, object]) -> None:
        if self._thinking:
            message["thinking"] = "".join(self._thinking)
            self._thinking = []

    def _part(self, part: Mapping[str, object], where: str) -> dict[str, object]:
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            return {"type": "text", "text": str(part.get("text", ""))}
        if kind == "refusal":
            return {"type": "text", "text": str(part.get("refusal", ""))}
        if kind == "input_image":
            if not part.get("image_url"):
                raise BadRequestError(
                    f"{where}: an input_image needs image_url, a data:image/...;base64,... URL "
                    "(file_id is not supported)",
                    param="input",
                )
            number = len(self._images) + 1
            self._images.append(image_from_url(part.get("image_url"), number, param="input"))
            return image_part(len(self._images) - 1)
        raise BadRequestError(
            f"{where}: content part type {kind!r} is not supported "
            "(input_text, output_text, refusal and input_image are)",
            param="input",
        )


def _reasoning_text(item: ReasoningItem) -> str:
    parts = item.content if item.content else item.summary
    return "".join(str(part.get("text", "")) for part in parts)
