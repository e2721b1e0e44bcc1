"""Chat templates: turning a conversation into the prompt text a model was trained on.

Templates come from model files (GGUF ``tokenizer.chat_template``), Modelfiles (``TEMPLATE``)
and requests (Ollama's ``template``), so they are untrusted code: they compile and render only
in a budgeted sandbox (``template_sandbox``): at most 256 KiB of source, and each render
stops itself past 2 s, a million loop iterations, or strings and lists past their caps
(``template_budget``). Whatever a template does wrong surfaces as a ``TemplateError``; a
template that calls ``raise_exception`` rejects the request (400), one over budget is a 400
too (``TemplateBudgetError``).

The globals are the ones Hugging Face and llama.cpp give templates: ``messages``, ``tools``,
``add_generation_prompt``, ``bos_token``, ``eos_token``, ``raise_exception``,
``strftime_now`` and a ``tojson`` filter that keeps non-ASCII text as is.

Which template: a Modelfile ``TEMPLATE`` wins over the model file's; with neither, ChatML.
``TEMPLATE`` may be Jinja or a small Go-template subset (see ``go_templates``).

A conversation that ends with the assistant's own words is continued, as Ollama and
llama-server do (``continued_reply``): the prompt ends inside that reply rather than after it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Literal, cast

from jinja2 import meta
from jinja2.exceptions import SecurityError

from localllm.daemon.errors import (
    BadRequestError,
    TemplateBudgetError,
    TemplateError,
    TemplateRejectedError,
    TemplateSecurityError,
)
from localllm.daemon.inference.go_templates import (
    RESPONSE_MARK,
    is_go_template,
    split_turns,
    to_jinja,
)
from localllm.daemon.inference.template_budget import (
    MAX_SOURCE_CHARS,
    MAX_STRING_CHARS,
    Budget,
    current_budget,
)
from localllm.daemon.inference.template_sandbox import Rejected, budget_hooks, sandbox

__all__ = [
    "CHATML_TEMPLATE",
    "ChatTemplate",
    "TemplateCache",
    "TemplateOrigin",
    "assemble_messages",
    "continued_reply",
    "image_part",
]

#: Where a chat template came from, as errors name it: the GGUF, the model's TEMPLATE layer,
#: the request, or the ChatML fallback for a model without one.
TemplateOrigin = Literal["model", "Modelfile", "request", "default"]

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
MAX_OUTPUT_CHARS = MAX_STRING_CHARS  # far past any context; stops a template eating memory


class ChatTemplate:
    """One compiled template; ``render`` turns messages into a prompt."""

    def __init__(self, source: str, origin: TemplateOrigin = "model"):
        self.source = source
        self.origin = origin  # named in errors
        if len(source) > MAX_SOURCE_CHARS:  # parsing takes seconds per MiB: refuse first
            raise TemplateBudgetError(
                f"the {origin} chat template is {len(source):,} characters; chat templates "
                f"may be at most {MAX_SOURCE_CHARS:,} ({MAX_SOURCE_CHARS >> 10} KiB)"
            )
        self.is_go = is_go_template(source)
        env = sandbox(hugging_face_style=not self.is_go)
        text = to_jinja(source) if self.is_go else source
        try:
            tree = env.parse(text)
            self.supports_tools = "tools" in meta.find_undeclared_variables(tree)
            self._template = env.from_string(budget_hooks(tree, env))
        except Exception as error:  # syntax, nesting too deep for the parser, ...
            raise TemplateError(
                f"the {origin} chat template does not parse: {_describe(error)}"
            ) from None

    def render(
        self,
        messages: Sequence[Mapping[str, object]],
        *,
        tools: Sequence[Mapping[str, object]] = (),
        add_generation_prompt: bool = True,
        bos_token: str = "",
        eos_token: str = "",
        variables: Mapping[str, object] | None = None,
    ) -> str:
        """The prompt; ``variables`` are more globals for the template (``enable_thinking``...).
        Blocking (a render may take up to its budget's 2 s): callers on an event loop run it in
        a worker thread."""
        with Budget().active():
            if self.is_go:
                return self._render_turns(messages)
            context = {
                **(variables or {}),
                "messages": [dict(m) for m in messages],
                "tools": [dict(t) for t in tools] or None,
                "add_generation_prompt": add_generation_prompt,
                "bos_token": bos_token,
                "eos_token": eos_token,
            }
            return self._run(context)

    def _render_turns(self, messages: Sequence[Mapping[str, object]]) -> str:
        text = "".join(self._run(turn) for turn in split_turns(messages))
        return text.split(RESPONSE_MARK, 1)[0]

    def _run(self, context: Mapping[str, object]) -> str:
        parts, size = [], 0
        try:
            current_budget().add_inputs(context.get("messages"), context.get("tools"))
            for part in self._template.generate(context):
                size += len(part)
                if size > MAX_OUTPUT_CHARS:
                    raise TemplateBudgetError(f"its output passed {MAX_OUTPUT_CHARS:,} characters")
                parts.append(part)
        except Rejected as error:
            raise TemplateRejectedError(
                f"the chat template rejected the request: {_clip(str(error))}"
            ) from None
        except TemplateBudgetError as error:
            raise TemplateBudgetError(
                f"the {self.origin} chat template went over its budget: {error}"
            ) from None
        except SecurityError as error:
            raise TemplateSecurityError(
                f"the {self.origin} chat template tried an operation the sandbox forbids "
                f"({_clip(str(error))})"
            ) from None
        except Exception as error:  # a template is code: anything it raises is its failure
            raise TemplateError(
                f"the {self.origin} chat template failed: {_describe(error)}"
            ) from None
        return "".join(parts)


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {_clip(str(error))}" if str(error) else type(error).__name__


def _clip(text: str, limit: int = 1000) -> str:
    """A template's own words in an error message, cut short (they may be megabytes)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class TemplateCache:
    """Compiled templates by source, so each is parsed once (bounded; oldest dropped first).
    Shared by the worker threads that render, hence the lock (compiling happens outside it)."""

    def __init__(self, capacity: int = 32):
        self._capacity = capacity
        self._templates: dict[tuple[str, str], ChatTemplate] = {}
        self._lock = threading.Lock()

    def get(self, source: str | None, origin: TemplateOrigin = "model") -> ChatTemplate:
        if not source:
            source, origin = CHATML_TEMPLATE, "default"
        key = (source, origin)
        with self._lock:
            template = self._templates.pop(key, None)
        template = template or ChatTemplate(source, origin)
        with self._lock:
            self._templates[key] = template
            while len(self._templates) > self._capacity:
                del self._templates[next(iter(self._templates))]
        return template


def image_part(index: int) -> dict[str, object]:
    """The content part that stands for image ``index`` (0-based) of a request."""
    return {"type": "image", "index": index}


def assemble_messages(
    messages: Sequence[Mapping[str, object]],
    *,
    system: str | None = None,
    preset: Sequence[Mapping[str, object]] = (),
    image_marker: str = "",
) -> list[dict[str, object]]:
    """The conversation the template sees: the model's SYSTEM (unless the request has a system
    message), then its MESSAGE layers, then the request's messages. Image parts become
    ``image_marker`` inside the content text, so templates only ever see string content (as
    with llama-server) and the runner finds each image's place in the prompt."""
    conversation = [_normalize(m, image_marker) for m in messages]
    head = [_normalize(m, "") for m in preset]  # the model's own MESSAGEs carry no images
    if system and not any(m.get("role") == "system" for m in conversation):
        head.insert(0, {"role": "system", "content": system})
    return head + conversation


def _normalize(message: Mapping[str, object], image_marker: str) -> dict[str, object]:
    """Content parts joined into one string; tool-call arguments as objects (what templates
    use)."""
    out = {k: v for k, v in message.items() if v is not None}
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = "".join(
            _part_text(part, image_marker) for part in content if isinstance(part, Mapping)
        )
    out.setdefault("content", "")
    if "tool_calls" in out:
        calls = cast(list[Mapping[str, object]], out["tool_calls"])  # a request's JSON
        out["tool_calls"] = [_tool_call_for_template(call) for call in calls]
    return out


def _part_text(part: Mapping[str, object], image_marker: str) -> str:
    if part.get("type") == "image":
        return image_marker
    return str(part.get("text", ""))


def _tool_call_for_template(call: Mapping[str, object]) -> dict[str, object]:
    function = dict(cast(Mapping[str, object], call.get("function") or {}))  # a request's JSON
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments)
        except ValueError:
            pass  # not JSON: the template gets the text
        except RecursionError:
            raise BadRequestError(
                "a tool call's arguments nest arrays or objects thousands of levels deep; "
                "send arguments a JSON parser can read",
                param="messages",
            ) from None
    return {**call, "function": function}


def continued_reply(
    conversation: Sequence[Mapping[str, object]],
) -> tuple[list[Mapping[str, object]], str]:
    """(the conversation before it, the text to continue) when the last message is a reply
    in words (no tool calls); else (the conversation, ""). The prompt is then the template's
    rendering of the rest, up to the assistant's turn, followed by that text."""
    messages = list(conversation)
    last = messages[-1] if messages else {}
    content = last.get("content")
    if last.get("role") != "assistant" or last.get("tool_calls") or not isinstance(content, str):
        return messages, ""
    return (messages[:-1], content) if content else (messages, "")
