"""Ollama's legacy Go-template TEMPLATEs, the small subset that older Modelfiles use.

Ollama Modelfiles write templates in Go's ``text/template``; Jinja cannot render them. We
translate the simple, common subset into Jinja (then render it in the same sandbox):
``{{ .System }}``, ``{{ .Prompt }}``, ``{{ .Response }}``, ``{{ if .X }}``/``{{ else }}``/
``{{ end }}``, ``{{/* comments */}}`` and the ``{{-``/``-}}`` trim markers. Anything else
(``range .Messages``, ``.Tools``, functions) is rejected with a message saying to write the
template in Jinja, as model files' own ``tokenizer.chat_template`` are.

A conversation is rendered Ollama's legacy way: one pass of the template per turn (system +
prompt + response), concatenated; the last turn stops where ``.Response`` would go.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence

from localllm.daemon.errors import TemplateError

__all__ = ["RESPONSE_MARK", "is_go_template", "split_turns", "to_jinja"]

RESPONSE_MARK = "\x00response\x00"  # stands for the reply the model is about to write

_GO_HINT = re.compile(r"\{\{-?\s*(?:\.[A-Za-z]|if\s+\.|range\s|end\s*-?\}\}|/\*)")
_GO_SPACE = " \t\r\n"  # what Go's trim markers remove
_FIELDS = {".System": "system", ".Prompt": "prompt", ".Response": "response"}
_HELP = (
    "only {{ .System }}, {{ .Prompt }}, {{ .Response }} and {{ if .X }}...{{ else }}..."
    "{{ end }} are supported in Go-style templates; write the template in Jinja instead "
    "(like the model file's tokenizer.chat_template)"
)


def is_go_template(source: str) -> bool:
    """True for Ollama-style templates (``{{ .Prompt }}``); Jinja never writes ``{{ .``."""
    return bool(_GO_HINT.search(source))


def to_jinja(source: str) -> str:
    """Translate the supported Go subset to Jinja, or raise TemplateError naming the action.

    Go's trim markers are applied here, to the text around them, so the Jinja needs none."""
    out, position, depth, trim_next = [], 0, 0, False
    for start, body, end in _actions(source):
        left, body, right = _trim_marks(body)
        out.append(_literal(source[position:start], trim_start=trim_next, trim_end=bool(left)))
        position, trim_next = end, bool(right)
        (mark, inner), depth = _action(body, depth)
        if mark:
            close = "}" if mark == "{" else mark
            out.append(f"{{{mark} {inner} {close}}}")
    if depth:
        raise TemplateError(f"TEMPLATE has an {{{{ if }}}} without {{{{ end }}}}; {_HELP}")
    out.append(_literal(source[position:], trim_start=trim_next, trim_end=False))
    return "".join(out)


def _actions(source: str) -> Iterator[tuple[int, str, int]]:
    """Each ``{{ ... }}``: where it starts, what is inside, where it ends. A scan with
    ``str.find``, linear in the source (a regex over many unclosed ``{{`` is quadratic); an
    action ends at the first ``}}``, as in Go, and an unclosed ``{{`` is literal text."""
    start = source.find("{{")
    while start != -1:
        end = source.find("}}", start + 2)
        if end == -1:
            return
        yield start, source[start + 2 : end], end + 2
        start = source.find("{{", end + 2)


def _trim_marks(body: str) -> tuple[str, str, str]:
    """``{{- x -}}`` -> ("-", "x", "-"): Go's trim markers, and the action stripped."""
    left = "-" if body.startswith("-") else ""
    body = body[len(left) :]
    right = "-" if body.endswith("-") else ""
    return left, body[: len(body) - len(right)].strip(), right


def _action(body: str, depth: int) -> tuple[tuple[str, str], int]:
    """One ``{{ ... }}`` action as Jinja: (``{`` or ``%``, what goes inside), and the if-depth."""
    if body.startswith("/*") and body.endswith("*/"):
        return ("", ""), depth
    if body in _FIELDS:
        return ("{", _FIELDS[body]), depth
    if body.startswith("if ") and body[3:].strip() in _FIELDS:
        return ("%", f"if {_FIELDS[body[3:].strip()]}"), depth + 1
    if body == "else" and depth:
        return ("%", "else"), depth
    if body == "end" and depth:
        return ("%", "endif"), depth - 1
    shown = body if len(body) <= 80 else body[:80] + "..."
    raise TemplateError(f"TEMPLATE uses {{{{ {shown} }}}}: {_HELP}")


def _literal(text: str, *, trim_start: bool, trim_end: bool) -> str:
    """Template text as Jinja that prints it unchanged: text that Jinja would read as markup
    becomes a string expression (a ``{% raw %}`` block would end at an ``{% endraw %}`` in
    the text, and what follows would run as Jinja)."""
    if trim_start:
        text = text.lstrip(_GO_SPACE)
    if trim_end:
        text = text.rstrip(_GO_SPACE)
    if "{%" in text or "{#" in text or "{{" in text:
        return "{{ " + json.dumps(text, ensure_ascii=False) + " }}"
    return text


def split_turns(messages: Sequence[Mapping[str, object]]) -> list[dict[str, str]]:
    """Messages -> ``[{system, prompt, response}]``, one per user turn, the last unanswered."""
    turns: list[dict[str, str]] = []
    system = ""
    current: dict[str, str] | None = None
    for message in messages:
        role, content = message.get("role"), str(message.get("content") or "")
        if role == "system":
            system = f"{system}\n{content}" if system else content
        elif role == "assistant":
            if current is None:
                current = {"system": system, "prompt": "", "response": ""}
                turns.append(current)
            current["response"] += content
            current = None
        else:  # user and tool results both speak to the model as the prompt
            if current is None or current["response"]:
                current = {"system": system if not turns else "", "prompt": "", "response": ""}
                turns.append(current)
            current["prompt"] = f"{current['prompt']}\n{content}" if current["prompt"] else content
    if not turns or turns[-1]["response"]:
        turns.append({"system": system if not turns else "", "prompt": "", "response": ""})
    turns[-1]["response"] = RESPONSE_MARK
    return turns
