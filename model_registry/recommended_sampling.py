"""The sampling a model's authors recommend, from its GGUF ``general.sampling.*`` keys.

Converters write these from a model's ``generation_config.json`` (Qwen3 asks for temperature
0.6, top-k 20...); llama.cpp's own tools use them when the command line says nothing, and so
do we: they sit under the Modelfile's PARAMETERs and the request's options. Values are read
as Ollama option names and checked against the one option table, so a hostile file can only
set what a request could (a value out of range is ignored, not obeyed).
"""

from __future__ import annotations

from collections.abc import Mapping

import gguf

from localllm.model_registry.errors import InvalidParameterError
from localllm.model_registry.parameters import check_parameter

__all__ = ["GGUF_KEY_OF_OPTION", "recommended_sampling"]

_KEYS = gguf.Keys.General
# GGUF key -> our option name (Ollama's). Mirostat and XTC are not samplers we run.
_OPTION_OF_KEY = {
    _KEYS.SAMPLING_TEMP: "temperature",
    _KEYS.SAMPLING_TOP_K: "top_k",
    _KEYS.SAMPLING_TOP_P: "top_p",
    _KEYS.SAMPLING_MIN_P: "min_p",
    _KEYS.SAMPLING_PENALTY_REPEAT: "repeat_penalty",
    _KEYS.SAMPLING_PENALTY_LAST_N: "repeat_last_n",
}
GGUF_KEY_OF_OPTION = {option: key for key, option in _OPTION_OF_KEY.items()}


def recommended_sampling(metadata: Mapping[str, object]) -> dict[str, object]:
    """Option name -> value for every ``general.sampling.*`` key we run and that is in range."""
    options: dict[str, object] = {}
    for key, option in _OPTION_OF_KEY.items():
        value = metadata.get(key)
        if value is None or isinstance(value, bool):
            continue
        if option in ("top_k", "repeat_last_n") and isinstance(value, float):
            if not value.is_integer():
                continue
            value = int(value)
        if isinstance(value, float):
            value = round(value, 6)  # stored as float32: 0.95 reads 0.949999988...
        try:
            options[option] = check_parameter(option, value)
        except InvalidParameterError:
            continue
    return options
