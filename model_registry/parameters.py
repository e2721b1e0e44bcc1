"""Model parameters and sampling fields: the one table of their types and accepted ranges.

Ollama's option names (``temperature``, ``num_ctx``, ``stop``...) reach the daemon as a
request's ``options``, as the OpenAI fields they translate from, and as Modelfile ``PARAMETER``
lines; every path checks values against this table, so a value a runner would choke on is
refused up front with the range that is accepted (``repeat_last_n`` of 250 million made a runner
allocate 1 GB for one request). The ranges are wide enough for any real use: a context of 16M
tokens, a seed of any 64-bit integer, OpenAI's own limits where OpenAI sets one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from localllm.model_registry.errors import InvalidParameterError

__all__ = [
    "FIELDS",
    "FLASH_ATTENTION",
    "KV_CACHE_TYPES",
    "LOGIT_BIAS_ENTRIES",
    "MAX_TOKEN_ID",
    "OPTIONS",
    "STOP_COUNT",
    "STOP_LENGTH",
    "FlashAttention",
    "KvCacheType",
    "Parameter",
    "check_parameter",
]

MAX_CONTEXT = 1 << 24  # tokens; llama.cpp's largest contexts are a few million
_INT64 = (-(1 << 63), (1 << 63) - 1)
STOP_COUNT = 16  # stop strings per request (OpenAI allows 4)
STOP_LENGTH = 256  # characters per stop string
LOGIT_BIAS_ENTRIES = 300  # token biases per request, as OpenAI allows
MAX_TOKEN_ID = 2**31 - 1  # llama.cpp's token type is a 32-bit int
KvCacheType = Literal["f16", "q8_0", "q4_0"]  # llama.cpp's K/V cache types (--cache-type-k/-v)
FlashAttention = Literal["auto", "on", "off"]
KV_CACHE_TYPES: tuple[KvCacheType, ...] = get_args(KvCacheType)
FLASH_ATTENTION: tuple[FlashAttention, ...] = get_args(FlashAttention)


@dataclass(frozen=True, slots=True)
class Parameter:
    kind: type  # int, float, bool or str
    low: int | float | None = None
    high: int | float | None = None
    modelfile: bool = True  # may be a Modelfile PARAMETER (num_parallel is the daemon's own)
    choices: tuple[str, ...] = ()  # a str parameter that is one of these (not a stop list)


#: Ollama's options, as ``options`` and Modelfile ``PARAMETER`` lines name them.
OPTIONS: dict[str, Parameter] = {
    "num_ctx": Parameter(int, 0, MAX_CONTEXT),  # 0: the daemon's default
    "num_batch": Parameter(int, 0, 1 << 16),
    "num_gpu": Parameter(int, -1, 1 << 16),  # layers; -1: all of them
    "num_cpu_moe": Parameter(int, -1, 1 << 16),  # layers whose experts stay in RAM; -1: all
    "num_thread": Parameter(int, 0, 1024),
    "num_parallel": Parameter(int, 0, 256, modelfile=False),
    "num_keep": Parameter(int, -1, MAX_CONTEXT),
    "num_draft": Parameter(int, 0, 64),  # tokens guessed per step (speculative); 0: off
    "num_predict": Parameter(int, -2, MAX_CONTEXT),  # -1: until done, -2: fill the context
    "top_k": Parameter(int, -1, 1 << 20),  # 0 or -1: off
    "repeat_last_n": Parameter(int, -1, MAX_CONTEXT),  # -1: the whole context
    "seed": Parameter(int, *_INT64),
    "mirostat": Parameter(int, 0, 2),
    "temperature": Parameter(float, 0, 2),
    "top_p": Parameter(float, 0, 1),
    "min_p": Parameter(float, 0, 1),
    "typical_p": Parameter(float, 0, 1),
    "repeat_penalty": Parameter(float, 0, 10),
    "presence_penalty": Parameter(float, -2, 2),
    "frequency_penalty": Parameter(float, -2, 2),
    "mirostat_eta": Parameter(float, 0, 10),
    "mirostat_tau": Parameter(float, 0, 100),
    "penalize_newline": Parameter(bool),
    "stop": Parameter(str, 0, STOP_LENGTH),
    "kv_cache_type": Parameter(str, choices=KV_CACHE_TYPES),  # load-time: a change reloads
    "flash_attention": Parameter(str, choices=FLASH_ATTENTION),  # load-time, as kv_cache_type
    "load_anyway": Parameter(bool),  # load where the memory plan says it does not fit
    # load-time: one slot, flash attention off, prompts resumed after whole batches, so an answer
    # never depends on what was read before or runs beside it
    "deterministic": Parameter(bool),
}

#: OpenAI request fields that are no option of their own but need a range all the same.
FIELDS: dict[str, Parameter] = {
    "max_tokens": Parameter(int, 0, MAX_CONTEXT),
    "max_completion_tokens": Parameter(int, 0, MAX_CONTEXT),
    "n": Parameter(int, 1, 128),
    "best_of": Parameter(int, 1, 128),
    "top_logprobs": Parameter(int, 0, 20),
    "logprobs": Parameter(int, 0, 5),  # the legacy completions' number of alternatives
}


def check_parameter(name: str, value: object) -> object:
    """``value`` as the type of option or field ``name`` (an ``int`` for ``3.0``), or
    :class:`InvalidParameterError` saying what is accepted."""
    parameter = OPTIONS.get(name) or FIELDS[name]
    if parameter.choices:
        if value not in parameter.choices:
            raise InvalidParameterError(
                name, f"{name} must be one of {', '.join(parameter.choices)}"
            )
        return value
    if parameter.kind is str:
        return _stops(name, value)
    if parameter.kind is bool:
        if not isinstance(value, bool):
            raise InvalidParameterError(name, f"{name} must be true or false")
        return value
    number = _number(value, parameter.kind)
    assert parameter.low is not None and parameter.high is not None  # every number has a range
    if number is None or not parameter.low <= number <= parameter.high:
        what = "an integer" if parameter.kind is int else "a number"
        raise InvalidParameterError(
            name, f"{name} must be {what} between {parameter.low} and {parameter.high}"
        )
    return number


def _number(value: object, kind: type) -> int | float | None:
    """``value`` as ``kind``, or None when it is not a finite number of that kind."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if kind is int:
        return int(value) if value == int(value) else None
    return float(value)


def _stops(name: str, value: object) -> list[str]:
    stops = [value] if isinstance(value, str) else value
    if (
        not isinstance(stops, list | tuple)
        or len(stops) > STOP_COUNT
        or not all(isinstance(s, str) and len(s) <= STOP_LENGTH for s in stops)
    ):
        raise InvalidParameterError(
            name,
            f"{name} must be a string or a list of at most {STOP_COUNT} strings "
            f"of at most {STOP_LENGTH} characters each",
        )
    return list(stops)
