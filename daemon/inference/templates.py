"""Chat templates: turning a conversation into the prompt text a model was trained on.

Templates come from model files (GGUF ``tokenizer.chat_template``) and Modelfiles
(``TEMPLATE``), so they are untrusted code: they are rendered only in Jinja2's
``ImmutableSandboxedEnvironment`` (a non-sandboxed renderer was CVE-2024-34359), with string
and number blow-ups and the output size capped. Whatever a template does wrong surfaces as a
``TemplateError``; a template that calls ``raise_exception`` rejects the request (400).

The globals are the ones Hugging Face and llama.cpp give templates: ``messages``, ``tools``,
``add_generation_prompt``, ``bos_token``, ``eos_token``, ``raise_exception``,
``strftime_now`` and a ``tojson`` filter that keeps non-ASCII text as is.

Which template: a Modelfile ``TEMPLATE`` wins over the model file's; with neither, ChatML.
``TEMPLATE`` may be Jinja or a small Go-template subset (see ``go_templates``).

A conversation that ends with the assistant's own words is continued, as Ollama and
llama-server do (``continued_reply``): the prompt ends inside that reply rather than after it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from collections.abc import Mapping, Sequence

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from daemon.errors import TemplateError, TemplateRejectedError, TemplateSecurityError
from daemon.inference.go_templates import RESPONSE_MARK, is_go_template, split_turns, to_jinja

__all__ = [
    "CHATML_TEMPLATE",
    "ChatTemplate",
    "TemplateCache",
    "assemble_messages",
    "continued_reply",
    "image_part",
]

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
MAX_OUTPUT_CHARS = 8 << 20  # far past any context; stops a template from eating memory
_MAX_SEQUENCE = 1 << 20  # longest string or list a template may build with * or **


class _Rejected(Exception):
    """Raised by a template's ``raise_exception``."""


class _Sandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, plus limits on ``*`` and ``**`` (``'x' * 10**12``)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context, operator, left, right):
        if operator == "**" and _huge_power(left, right):
            raise SecurityError("exponent too large")
        if operator == "*" and (_huge_repeat(left, right) or _huge_repeat(right, left)):
            raise SecurityError("sequence repetition too large")
        return super().call_binop(context, operator, left, right)


def _huge_power(base: object, exponent: object) -> bool:
    if not isinstance(base, int) or not isinstance(exponent, int):
        return False
    return abs(exponent) > 64 or abs(base).bit_length() * abs(exponent) > 1 << 16


def _huge_repeat(sequence: object, count: object) -> bool:
    if not isinstance(sequence, str | list | tuple) or not isinstance(count, int):
        return False
    return len(sequence) * count > _MAX_SEQUENCE


def _raise_exception(message: str = "") -> None:
    raise _Rejected(str(message))


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(str(fmt))


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _environment(hugging_face_style: bool) -> _Sandbox:
    env = _Sandbox(
        trim_blocks=hugging_face_style,
        lstrip_blocks=hugging_face_style,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.loopcontrols"],
        autoescape=False,
    )
    env.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now)
    env.filters["tojson"] = _tojson
    return env


class ChatTemplate:
    """One compiled template; ``render`` turns messages into a prompt."""

    def __init__(self, source: str, origin: str = "model"):
        self.source = source
        self.origin = origin  # "model", "Modelfile" or "default": named in error messages
        self.is_go = is_go_template(source)
        env = _environment(hugging_face_style=not self.is_go)
        text = to_jinja(source) if self.is_go else source
        try:
            self._template = env.from_string(text)
            names = meta.find_undeclared_variables(env.parse(text))
        except jinja2.TemplateSyntaxError as error:
            raise TemplateError(f"the {origin} chat template does not parse: {error}") from None
        self.supports_tools = "tools" in names

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
        """``variables``: more globals for the template (``enable_thinking``...)."""
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
            for part in self._template.generate(context):
                size += len(part)
                if size > MAX_OUTPUT_CHARS:
                    raise SecurityError("output too large")
                parts.append(part)
        except _Rejected as error:
            raise TemplateRejectedError(
                f"the chat template rejected the request: {error}"
            ) from None
        except SecurityError as error:
            raise TemplateSecurityError(
                f"the {self.origin} chat template tried an operation the sandbox forbids ({error})"
            ) from None
        except Exception as error:  # a template is code: anything it raises is its failure
            raise TemplateError(
                f"the {self.origin} chat template failed: {type(error).__name__}: {error}"
            ) from None
        return "".join(parts)


class TemplateCache:
    """Compiled templates by source, so each is parsed once (bounded; oldest dropped first)."""

    def __init__(self, capacity: int = 32):
        self._capacity = capacity
        self._templates: dict[tuple[str, str], ChatTemplate] = {}

    def get(self, source: str | None, origin: str = "model") -> ChatTemplate:
        if not source:
            source, origin = CHATML_TEMPLATE, "default"
        key = (source, origin)
        template = self._templates.pop(key, None) or ChatTemplate(source, origin)
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
        out["tool_calls"] = [_tool_call_for_template(call) for call in out["tool_calls"]]
    return out


def _part_text(part: Mapping[str, object], image_marker: str) -> str:
    if part.get("type") == "image":
        return image_marker
    return str(part.get("text", ""))


def _tool_call_for_template(call: Mapping[str, object]) -> dict[str, object]:
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            function["arguments"] = json.loads(arguments)
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
