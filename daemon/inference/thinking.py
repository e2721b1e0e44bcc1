"""Thinking models: which format a model thinks in, what its template is told, and the plan.

Three formats are known, found in the chat template (``detect_format``) or, where the template
says nothing, in the vocabulary (``vocabulary_format``: the markers are single tokens):

- ``<think>...</think>`` (Qwen3, QwQ, DeepSeek-R1 and its distills). Qwen3's templates take
  ``enable_thinking`` (false writes an empty thinking block, so the model answers at once);
  R1-style templates open ``<think>\\n`` in the generation prompt, so the output starts inside
  the thinking.
- gpt-oss's "harmony" channels: ``<|channel|>analysis<|message|>...<|end|>`` is the thinking,
  ``<|start|>assistant<|channel|>final<|message|>...`` the answer; the template takes
  ``reasoning_effort`` (low, medium, high) and thinking cannot be turned off.
- Mistral's ``[THINK]...[/THINK]`` (Magistral).

``ThinkingPlan`` says, for one request, how the output is split (``thinking_split``), whether
the prompt must be made to open the thinking, and whether the generation runs in two parts: a
thinking part, then an answer part whose prompt is the first prompt, the thinking so far and
the closing marker (``thinking_run``). That happens with a budget (the thinking is cut there)
and with a grammar (JSON output, forced tool calls), which then applies to the answer only.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from localllm.daemon.errors import BadRequestError

__all__ = [
    "EFFORTS",
    "HARMONY",
    "MISTRAL",
    "THINK_TAGS",
    "Think",
    "ThinkingFormat",
    "ThinkingPlan",
    "VocabularyFormats",
    "detect_format",
    "history_for_template",
    "parse_think",
    "parse_think_budget",
    "plan_thinking",
    "template_variables",
    "vocabulary_format",
]

EFFORTS = ("low", "medium", "high")
Think = bool | str | None


@dataclass(frozen=True, slots=True)
class ThinkingFormat:
    """How one family marks its thinking, in the text the runner hands back."""

    name: str
    opening: str  # what opens the thinking in the output
    closing: str  # what ends it
    open_prompt: str  # appended to a prompt so the output starts inside the thinking
    close_prompt: str  # appended after the thinking so the model goes on with its answer
    tokens: tuple[str, ...] = ()  # special tokens the runner must keep in the text
    switchable: bool = False  # the template can turn thinking off (``enable_thinking``)
    takes_effort: bool = False  # the template reads ``reasoning_effort``


THINK_TAGS = ThinkingFormat(
    "think", "<think>", "</think>", "<think>\n", "\n</think>\n\n", ("<think>", "</think>")
)
HARMONY = ThinkingFormat(
    "harmony",
    "<|channel|>analysis<|message|>",
    "<|end|>",
    "<|channel|>analysis<|message|>",
    "<|end|><|start|>assistant<|channel|>final<|message|>",
    ("<|start|>", "<|end|>", "<|channel|>", "<|message|>", "<|constrain|>"),
)
MISTRAL = ThinkingFormat(
    "mistral", "[THINK]", "[/THINK]", "[THINK]", "[/THINK]", ("[THINK]", "[/THINK]")
)

# What gives each format away, most specific first: in a template, and in a vocabulary.
_Signs = tuple[tuple[ThinkingFormat, tuple[str, ...]], ...]
_TEMPLATE_SIGNS: _Signs = (
    (HARMONY, ("<|channel|>",)),
    (MISTRAL, ("[THINK]",)),
    (THINK_TAGS, ("<think>", "</think>", "enable_thinking")),
)
_VOCABULARY_SIGNS: _Signs = (
    (HARMONY, ("<|channel|>", "<|message|>")),
    (MISTRAL, ("[THINK]", "[/THINK]")),
    (THINK_TAGS, ("<think>", "</think>")),
)


def detect_format(template: str | None) -> ThinkingFormat | None:
    """The thinking format a chat template uses, with what the template lets a request set."""
    if not template:
        return None
    for fmt, signs in _TEMPLATE_SIGNS:
        if any(sign in template for sign in signs):
            return dataclasses.replace(
                fmt,
                switchable=fmt is THINK_TAGS and "enable_thinking" in template,
                takes_effort="reasoning_effort" in template,
            )
    return None


async def vocabulary_format(
    tokenize: Callable[[str], Awaitable[Sequence[int]]],
) -> ThinkingFormat | None:
    """The format whose markers are single tokens of the model (``tokenize`` parses special
    tokens): for models whose template does not tell."""
    for fmt, markers in _VOCABULARY_SIGNS:
        counts = await asyncio.gather(*(tokenize(marker) for marker in markers))
        if all(len(ids) == 1 for ids in counts):
            return fmt
    return None


class VocabularyFormats:
    """Each model's format by its vocabulary, asked of its runner once (by its weights)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, ...], ThinkingFormat | None] = {}

    async def get(
        self, weights: tuple[str, ...], tokenize: Callable[[str], Awaitable[Sequence[int]]]
    ) -> ThinkingFormat | None:
        if weights not in self._known:
            self._known[weights] = await vocabulary_format(tokenize)
        return self._known[weights]


def parse_think(value: object) -> Think:
    """A request's ``think``: true, false, an effort, or None (the model's default)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value in EFFORTS:
        return value
    raise BadRequestError(
        f'think must be true, false, "low", "medium" or "high", not {value!r}', param="think"
    )


def parse_think_budget(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequestError(
            "think_budget must be a whole number of tokens, 0 or more", param="think_budget"
        )
    return value


def template_variables(think: Think, fmt: ThinkingFormat | None) -> dict[str, object]:
    """What the template gets: ``enable_thinking`` (Qwen3's convention) and, with an effort,
    ``reasoning_effort``. A template that cannot turn thinking off is asked for the least."""
    if think is None or fmt is None:
        return {}
    variables: dict[str, object] = {"enable_thinking": think is not False}
    if isinstance(think, str):
        variables["reasoning_effort"] = think
    elif think is False and fmt.takes_effort and not fmt.switchable:
        variables["reasoning_effort"] = "low"
    return variables


def history_for_template(messages: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Past thinking under both names templates read: ``reasoning_content`` (Qwen3) and
    ``thinking`` (gpt-oss); a template that reads neither drops it."""
    out = []
    for message in messages:
        thought = message.get("thinking") or message.get("reasoning_content")
        if message.get("role") == "assistant" and isinstance(thought, str) and thought:
            message = {**message, "thinking": thought, "reasoning_content": thought}
        out.append(dict(message))
    return out


@dataclass(frozen=True, slots=True)
class ThinkingPlan:
    """How one request's output is split into thinking and answer."""

    format: ThinkingFormat
    show: bool  # the thinking reaches ``Delta.thinking``; False: it is dropped
    opened: bool  # the prompt (with ``opening``) ends inside the thinking
    opening: str = ""  # appended to the prompt so the output starts inside the thinking
    budget: int | None = None  # thinking tokens before the model is made to answer
    two_parts: bool = False  # think first, then answer in a second generation


def plan_thinking(
    model: str,
    fmt: ThinkingFormat | None,
    think: Think,
    prompt: str,
    *,
    budget: int | None = None,
    grammar: bool = False,
) -> ThinkingPlan | None:
    """The plan for a request, or None for a model that does not think."""
    if fmt is None:
        if think:
            raise BadRequestError(f"model {model!r} does not support thinking", param="think")
        return None
    thinks = think is not False or not fmt.switchable  # False only turns off what can be
    two_parts = thinks and (budget is not None or grammar)
    opened = _ends_inside(prompt, fmt)
    opening = ""
    if not opened and (two_parts or (think and thinks)):
        opening, opened = fmt.open_prompt, True
    return ThinkingPlan(
        fmt,
        show=think is not False,
        opened=opened,
        opening=opening,
        budget=budget if two_parts else None,
        two_parts=two_parts,
    )


def _ends_inside(prompt: str, fmt: ThinkingFormat) -> bool:
    """The template's generation prompt already opened the thinking (R1 style)."""
    return prompt.rstrip().endswith(fmt.opening)
