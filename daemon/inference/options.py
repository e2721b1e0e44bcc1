"""Request options: Ollama-style option names -> sampling parameters and runner options.

Every API speaks the same option names (``temperature``, ``num_ctx``, ``stop``, ...):
Ollama's ``options`` object directly, the OpenAI routes by translation. The model's PARAMS
layer gives the defaults, the request overrides them, and anything else comes from settings.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import TypeVar

from localllm.daemon.errors import BadRequestError
from localllm.daemon.runners.types import DEFAULT_DRAFT, SamplingParams
from localllm.daemon.scheduler import RunnerOptions
from localllm.daemon.settings import MAX_KEEP_ALIVE_SECONDS, Settings
from localllm.model_registry.errors import InvalidParameterError
from localllm.model_registry.parameters import (
    FLASH_ATTENTION,
    KV_CACHE_TYPES,
    OPTIONS,
    FlashAttention,
    KvCacheType,
    check_parameter,
)

__all__ = ["checked", "merge_options", "parse_keep_alive", "runner_options", "sampling_params"]

_FLOATS = (
    "temperature",
    "top_p",
    "min_p",
    "typical_p",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
)
_INTS = ("top_k", "repeat_last_n", "seed", "num_predict")  # num_predict: ``max_tokens``
_RUNNER_INTS = (
    "num_ctx",
    "num_batch",
    "num_gpu",
    "num_cpu_moe",
    "num_thread",
    "num_parallel",
    "num_draft",
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_MAX_DURATION_TEXT = 64  # "2562047h47m16.854775807s" is Go's longest duration
_Choice = TypeVar("_Choice", bound=str)  # one of an option's closed set of values
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_keep_alive(value: object) -> float | None:
    """Seconds from a number or a Go duration ("5m", "1h30m", "-1"); None when unset.

    0 unloads the model right after the request; a negative value keeps it loaded forever.
    Anything else must be a finite number of seconds up to ``MAX_KEEP_ALIVE_SECONDS``: an
    infinite, NaN or far-future expiry broke ``/api/ps`` for every client (and NaN made the
    unloader spin).
    """
    if value is None or value == "":
        return None
    seconds = _keep_alive_seconds(value)
    if not math.isfinite(seconds) or seconds > MAX_KEEP_ALIVE_SECONDS:
        raise BadRequestError(
            f"keep_alive must be at most {MAX_KEEP_ALIVE_SECONDS:,.0f} seconds (about 31 "
            f"years), or negative to keep the model loaded for ever; got {str(value)[:40]!r}",
            "keep_alive",
        )
    return seconds


def _keep_alive_seconds(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits
            return math.inf
    if not isinstance(value, str):
        raise BadRequestError("keep_alive must be a number of seconds or a duration", "keep_alive")
    text = value.strip()
    if len(text) > _MAX_DURATION_TEXT:
        raise BadRequestError(
            f"keep_alive is {len(text):,} characters long; send a number of seconds or a "
            "duration such as '5m' or '1h30m'",
            "keep_alive",
        )
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    try:
        return sign * float(body)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        raise BadRequestError(
            f"invalid keep_alive duration {value!r} (try '5m' or 300)", "keep_alive"
        )
    return sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def merge_options(*layers: Mapping[str, object] | None) -> dict[str, object]:
    """Later layers win; ``None`` values mean "not set" and never override.

    Every option the table knows is checked against its range (a 400 naming it); unknown
    names pass through unused, as Ollama ignores them."""
    merged: dict[str, object] = {}
    for layer in layers:
        merged.update({k: v for k, v in (layer or {}).items() if v is not None})
    return {k: checked(k, v) if k in OPTIONS else v for k, v in merged.items()}


def checked(name: str, value: object, what: str = "option") -> object:
    """``value`` checked against the range of option or field ``name``; a 400 naming both."""
    try:
        return check_parameter(name, value)
    except InvalidParameterError as error:
        raise BadRequestError(f"{what} {error}".lstrip(), param=name) from None


def sampling_params(
    options: Mapping[str, object],
    *,
    grammar: str | None = None,
    json_schema: str | None = None,
    logit_bias: dict[int, float] | None = None,
    logprobs: int | None = None,
) -> SamplingParams:
    """Sampling parameters from merged options; the keywords set fields directly (None: the
    default)."""
    floats = {key: _float_option(key, options[key]) for key in _FLOATS if key in options}
    ints = {key: _int_option(key, options[key]) for key in _INTS if key in options}
    max_tokens = ints.get("num_predict")
    if max_tokens is not None and max_tokens < 0:
        max_tokens = None  # Ollama: num_predict -1 "until done", -2 "fill the context"
    default = SamplingParams()
    return dataclasses.replace(
        default,
        max_tokens=max_tokens,
        temperature=floats.get("temperature", default.temperature),
        top_k=ints.get("top_k", default.top_k),
        top_p=floats.get("top_p", default.top_p),
        min_p=floats.get("min_p", default.min_p),
        typical_p=floats.get("typical_p", default.typical_p),
        repeat_penalty=floats.get("repeat_penalty", default.repeat_penalty),
        repeat_last_n=ints.get("repeat_last_n", default.repeat_last_n),
        presence_penalty=floats.get("presence_penalty", default.presence_penalty),
        frequency_penalty=floats.get("frequency_penalty", default.frequency_penalty),
        seed=ints.get("seed", default.seed),
        stop=_stop_option(options["stop"]) if "stop" in options else default.stop,
        grammar=default.grammar if grammar is None else grammar,
        json_schema=default.json_schema if json_schema is None else json_schema,
        logit_bias=default.logit_bias if logit_bias is None else logit_bias,
        logprobs=default.logprobs if logprobs is None else logprobs,
    )


def runner_options(
    options: Mapping[str, object], settings: Settings, n_ctx_train: int | None = None
) -> RunnerOptions:
    """How the runner must be started for these options (settings fill what is unset)."""
    ints = {key: _int_option(key, options[key]) for key in _RUNNER_INTS if key in options}
    num_ctx = ints.get("num_ctx") or settings.num_ctx  # 0: sized at load (``context_size``)
    if not ints.get("num_ctx") and n_ctx_train and num_ctx:
        num_ctx = min(num_ctx, n_ctx_train)  # the default never exceeds what the model knows
    if 0 < num_ctx < 16:
        raise BadRequestError("num_ctx must be at least 16", param="num_ctx")
    deterministic = _bool_option("deterministic", options.get("deterministic", False))
    kv_cache_type, flash_attention = _cache_options(options, settings, deterministic)
    num_parallel = max(0, ints.get("num_parallel") or settings.num_parallel)  # 0: chosen
    if deterministic:
        num_parallel = _deterministic_parallel(ints.get("num_parallel"))
    prompt_cache_bytes = max(0, settings.prompt_cache_bytes)  # 0: off
    return RunnerOptions(
        num_ctx=num_ctx,
        num_parallel=num_parallel,
        num_gpu=ints.get("num_gpu"),
        num_cpu_moe=ints.get("num_cpu_moe"),
        num_threads=ints.get("num_thread") or settings.num_threads,
        num_batch=min(num_ctx or 512, max(1, ints.get("num_batch") or 512)),  # never above ctx
        kv_cache_type=kv_cache_type,
        flash_attention=flash_attention,
        backend_sampling=settings.backend_sampling,
        # a deterministic runner keeps both: a state in RAM or on disk says how much of it
        # was read in whole batches, and it resumes only after those
        host_cache_bytes=max(0, settings.host_cache_mib) << 20,
        prompt_cache_dir=str(settings.prompt_cache_dir) if prompt_cache_bytes else None,
        prompt_cache_bytes=prompt_cache_bytes,
        num_draft=ints.get("num_draft", DEFAULT_DRAFT),
        load_anyway=_bool_option("load_anyway", options.get("load_anyway", False)),
        deterministic=deterministic,
    )


def _cache_options(
    options: Mapping[str, object], settings: Settings, deterministic: bool
) -> tuple[KvCacheType, FlashAttention]:
    """The KV cache type and flash attention mode. llama.cpp stores a quantized V cache only
    with flash attention: ``auto`` turns it on for one, an explicit ``off`` is refused.
    ``deterministic`` runs without it: llama.cpp's CPU kernel sums differently for batches of
    other sizes (``tests/test_resumed_reads.py``)."""
    kv_cache_type = _choice_option(
        "kv_cache_type", options.get("kv_cache_type", settings.kv_cache_type), KV_CACHE_TYPES
    )
    flash = _choice_option(
        "flash_attention", options.get("flash_attention", settings.flash_attention), FLASH_ATTENTION
    )
    if deterministic:
        _refuse_flash_attention(kv_cache_type, options.get("flash_attention"))
        return kv_cache_type, "off"
    if kv_cache_type != "f16":
        if flash == "off":
            raise BadRequestError(
                f"kv_cache_type {kv_cache_type} needs flash attention; "
                "set flash_attention to on or auto, or use kv_cache_type f16",
                param="kv_cache_type",
            )
        flash = "on"
    return kv_cache_type, flash


def _refuse_flash_attention(kv_cache_type: KvCacheType, flash_asked: object) -> None:
    """A 400 for what a deterministic runner cannot do: flash attention asked for, or a
    quantized cache (whose V llama.cpp stores only with flash attention)."""
    if kv_cache_type != "f16":
        raise BadRequestError(
            f"deterministic runs without flash attention, which kv_cache_type {kv_cache_type} "
            "needs; use kv_cache_type f16, or drop deterministic",
            param="kv_cache_type",
        )
    if flash_asked == "on":
        raise BadRequestError(
            "deterministic runs with flash attention off; drop flash_attention on, or drop "
            "deterministic",
            param="flash_attention",
        )


def _deterministic_parallel(asked: int | None) -> int:
    """One slot: sequences that share a ``llama_decode`` get other sums than one alone (a 256-
    wide F16 model's logprobs moved by about 5e-6 beside 3 others), so a deterministic
    request never shares a batch; an explicit num_parallel above 1 is refused."""
    if asked is not None and asked > 1:
        raise BadRequestError(
            "deterministic serves one request at a time per model (num_parallel 1); "
            f"drop num_parallel {asked}, or drop deterministic",
            param="num_parallel",
        )
    return 1


# What ``checked`` returns is of the option's kind (its table says which); these say so to
# the type checker, and fail loudly should the table and the option ever disagree.
def _int_option(name: str, value: object) -> int:
    number = checked(name, value)
    if not isinstance(number, int):
        raise TypeError(f"option {name} is no integer option")
    return number


def _float_option(name: str, value: object) -> float:
    number = checked(name, value)
    if not isinstance(number, int | float):
        raise TypeError(f"option {name} is no number option")
    return number


def _bool_option(name: str, value: object) -> bool:
    flag = checked(name, value)
    if not isinstance(flag, bool):
        raise TypeError(f"option {name} is no true-or-false option")
    return flag


def _stop_option(value: object) -> tuple[str, ...]:
    stops = checked("stop", value)
    if not isinstance(stops, list):
        raise TypeError("option stop is no list of strings")
    return tuple(s for s in stops if isinstance(s, str) and s)


def _choice_option(name: str, value: object, choices: tuple[_Choice, ...]) -> _Choice:
    chosen = checked(name, value)
    for choice in choices:
        if choice == chosen:
            return choice
    raise TypeError(f"option {name} is not one of {choices}")
