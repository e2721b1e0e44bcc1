"""Every setting, declared once: its environment variable, the parser that reads it, its
default as people read it, what it does and its group. ``Settings.from_env`` parses from this
table only, and ``localllm serve --help``, the app's Settings page and docs/configuration.md
describe from it, so none of them can leave a variable out or tell a stale default.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, get_args

from localllm.daemon.runners.types import BackendSampling
from localllm.model_registry.parameters import FLASH_ATTENTION, KV_CACHE_TYPES

__all__ = [
    "DEFAULT_PORT",
    "MAX_KEEP_ALIVE_SECONDS",
    "PROMPT_CACHE_CAP",
    "SETTINGS",
    "Setting",
    "parse_host",
]

DEFAULT_PORT = 11435
MAX_KEEP_ALIVE_SECONDS = 1e9  # about 31 years; a negative keep_alive is "for ever"
PROMPT_CACHE_CAP = 20 << 30  # the most the prompt cache on disk takes unless set (20 GiB)
_GIB = 1 << 30  # LOCALLLM_PROMPT_CACHE_GB counts GiB, as LOCALLLM_HOST_CACHE_MB counts MiB

Parse = Callable[[str, str], Any]  # (the variable's value, its name) -> the field's value


@dataclass(frozen=True, slots=True)
class Setting:
    """One environment variable. A blank value counts as unset. Two variables may set one
    field: the later in ``SETTINGS`` wins (HF_HUB_CACHE over HF_HOME)."""

    name: str
    field: str | None  # the Settings attribute it sets; None: read by the installers
    parse: Parse  # raises ValueError saying what is allowed
    default: str  # as people read it; a number first where the default is one
    help: str
    choices: tuple[str, ...] = ()
    secret: bool = False  # its value is never shown
    group: str = ""

    @property
    def description(self) -> str:
        """The help, with the choices when there are some."""
        return f"{self.help}; one of {', '.join(self.choices)}" if self.choices else self.help


def parse_host(value: str) -> tuple[str, int]:
    """Read ``host``, ``host:port``, ``:port``, ``[::1]:port`` or ``http://host:port``."""
    text = value.strip().removeprefix("http://").removeprefix("https://").rstrip("/")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    host = host or "127.0.0.1"
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"invalid port in LOCALLLM_HOST={value!r}")
    return host, int(port_text)


def _address(raw: str, name: str) -> tuple[str, int]:
    return parse_host(raw)


def _text(raw: str, name: str) -> str:
    return raw


def _path(raw: str, name: str) -> Path:
    return Path(raw)


def _user_path(raw: str, name: str) -> Path:
    return Path(raw).expanduser()


def _hub_in(raw: str, name: str) -> Path:
    return Path(raw).expanduser() / "hub"


def _on(raw: str, name: str) -> bool:
    return True


def _origins(raw: str, name: str) -> tuple[str, ...]:
    return tuple(origin.strip() for origin in raw.split(",") if origin.strip())


def _folders(raw: str, name: str) -> tuple[Path, ...]:
    return tuple(Path(part).expanduser() for part in raw.split(os.pathsep) if part.strip())


def _integer(raw: str, name: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw.strip()!r}") from None


def _at_least_one(raw: str, name: str) -> int:
    value = _integer(raw, name)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def _threads(raw: str, name: str) -> int | None:
    return _integer(raw, name) or None  # 0: llama.cpp's own choice


def _number(raw: str, name: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw.strip()!r}") from None


def _keep_alive(raw: str, name: str) -> float:
    value = _number(raw, name)
    if not math.isfinite(value) or value > MAX_KEEP_ALIVE_SECONDS:
        raise ValueError(
            f"{name} must be a number of seconds up to {MAX_KEEP_ALIVE_SECONDS:,.0f}, or "
            f"negative to keep models loaded for ever, got {value:g}"
        )
    return value


def _seconds(raw: str, name: str) -> float:
    value = _number(raw, name)
    if not math.isfinite(value) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds above 0, got {value:g}")
    return value


def _gib(raw: str, name: str) -> int:
    gib = _number(raw, name)
    if not math.isfinite(gib) or gib < 0:
        raise ValueError(
            f"{name} must be a number of GiB, 0 or more (0 turns the prompt cache off), got {gib:g}"
        )
    return int(gib * _GIB)


def _one_of(choices: tuple[str, ...]) -> Parse:
    def choose(raw: str, name: str) -> str:
        wanted = raw.strip().lower()
        if wanted in choices:
            return wanted
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {wanted!r}")

    return choose


def _choice(name: str, field: str, default: str, help: str, choices: tuple[str, ...]) -> Setting:
    return Setting(name, field, _one_of(choices), default, help, choices=choices)


def _group(title: str, *settings: Setting) -> tuple[Setting, ...]:
    return tuple(replace(setting, group=title) for setting in settings)


SETTINGS: tuple[Setting, ...] = (
    *_group(
        "server",
        Setting(
            "LOCALLLM_HOST", "address", _address, f"127.0.0.1:{DEFAULT_PORT}",
            "where the daemon listens and clients connect: HOST, HOST:PORT, :PORT or [::1]:PORT",
        ),
        Setting(
            "LOCALLLM_KEEP_ALIVE", "keep_alive_seconds", _keep_alive, "300",
            "seconds a model stays loaded after its last use; negative: for ever",
        ),
        Setting(
            "LOCALLLM_MAX_QUEUE", "max_queue", _integer, "512",
            'requests that may wait for a model before the daemon answers "server busy"',
        ),
        Setting(
            "LOCALLLM_MAX_PULLS", "max_pulls", _at_least_one, "3",
            "pulls downloading at once; the others wait, queued",
        ),
        Setting(
            "LOCALLLM_HEADER_TIMEOUT", "header_timeout", _seconds, "30",
            "seconds a request's headers may take to arrive, in all",
        ),
        Setting(
            "LOCALLLM_BODY_TIMEOUT", "body_timeout", _seconds, "60",
            "seconds a request body may stall, not its whole upload",
        ),
        Setting(
            "LOCALLLM_REMOTE_CHECK_INTERVAL", "remote_check_interval", _seconds, "10",
            "seconds between health checks of remote engines",
        ),
        Setting(
            "LOCALLLM_LOG_MAX_BYTES", "log_max_bytes", _at_least_one, "10485760, 10 MiB",
            "bytes after which daemon.log rolls over; 3 older files are kept",
        ),
    ),
    *_group(
        "models and memory",
        Setting(
            "LOCALLLM_MAX_LOADED_MODELS", "max_loaded_models", _integer, "0, by memory",
            "models kept loaded at once",
        ),
        Setting(
            "LOCALLLM_NUM_PARALLEL", "num_parallel", _integer, "0, 4 or more on a GPU",
            "requests one model serves at once",
        ),
        Setting(
            "LOCALLLM_CONTEXT_LENGTH", "num_ctx", _integer, "0, sized per model",
            "a fixed context, in tokens, for models that do not set num_ctx",
        ),
        Setting(
            "LOCALLLM_CONTEXT_CAP", "context_cap", _at_least_one, "32768",
            "the longest context that sizing picks; a request may ask for more",
        ),
        _choice(
            "LOCALLLM_KV_CACHE_TYPE", "kv_cache_type", "f16",
            "the K/V cache type of models that do not set kv_cache_type", KV_CACHE_TYPES,
        ),
        Setting(
            "LOCALLLM_HOST_CACHE_MB", "host_cache_mib", _integer, "1024",
            "RAM (MiB) per model for conversations that lost their slot; 0: off",
        ),
        Setting(
            "LOCALLLM_PROMPT_CACHE_GB", "prompt_cache_bytes", _gib,
            "10% of the free disk, at most 20",
            "disk (GiB) for the states of long prompts, shared by every model; 0: off",
        ),
    ),
    *_group(
        "runners",
        Setting(
            "LOCALLLM_NUM_THREADS", "num_threads", _threads, "0, llama.cpp's choice",
            "CPU threads each runner computes with",
        ),
        _choice(
            "LOCALLLM_FLASH_ATTENTION", "flash_attention", "auto",
            "flash attention", FLASH_ATTENTION,
        ),
        _choice(
            "LOCALLLM_BACKEND_SAMPLING", "backend_sampling", "auto",
            "sampling inside the decode (auto: on a GPU)", get_args(BackendSampling),
        ),
    ),
    *_group(
        "network and security",
        Setting(
            "LOCALLLM_API_KEY", "api_key", _text, "none; off loopback, `localllm key`'s",
            "the API key clients must send; listening beyond this computer needs one",
            secret=True,
        ),
        Setting(
            "LOCALLLM_ADMIN_TOKEN", "admin_token", _text, "the config folder's admin_token",
            "the token that changing remotes needs; the CLI and the app send it",
            secret=True,
        ),
        Setting(
            "LOCALLLM_ORIGINS", "origins", _origins, "none, local pages only",
            "more browser origins allowed to call the API, comma-separated; '*' is refused",
        ),
    ),
    *_group(
        "folders",
        Setting(
            "LOCALLLM_DATA", "data_dir", _path, "the system's app data folder",
            "pulls, chats, the prompt cache and, unless set apart, models and logs",
        ),
        Setting(
            "LOCALLLM_MODELS", "models_dir", _user_path, "LOCALLLM_DATA/models",
            "the model store: blobs and manifests",
        ),
        Setting(
            "LOCALLLM_CONFIG", "config_dir", _path, "the system's app config folder",
            "the API key, the admin token, remotes and other preferences",
        ),
        Setting(
            "LOCALLLM_LOGS", "log_dir", _path, "LOCALLLM_DATA/logs", "where daemon.log is written"
        ),
        Setting(
            "LOCALLLM_CATALOG", "catalog_path", _path, "the built-in catalog",
            "a JSON file of short model names to use instead of the built-in one",
        ),
    ),
    *_group(
        "Hugging Face and other apps",
        Setting(
            "HF_TOKEN", "hf_token", _text, "the one `localllm login` saved",
            "Hugging Face token, for gated and private models",
            secret=True,
        ),
        Setting(
            "HF_ENDPOINT", "hf_endpoint", _text, "https://huggingface.co",
            "another Hugging Face endpoint, such as a mirror",
        ),
        Setting(
            "HF_HOME", "hf_hub_cache", _hub_in, "~/.cache/huggingface",
            "Hugging Face's folder: its hub/ is scanned for models already on this computer",
        ),
        Setting(
            "HF_HUB_CACHE", "hf_hub_cache", _user_path, "HF_HOME/hub",
            "Hugging Face's model cache, scanned for models already on this computer",
        ),
        Setting(
            "OLLAMA_MODELS", "ollama_models", _path, "~/.ollama/models",
            "Ollama's models, scanned for models already on this computer",
        ),
        Setting(
            "LOCALLLM_IMPORT_DIRS", "import_dirs", _folders, "none",
            "more folders scanned for GGUF files, separated by ':', on Windows ';'",
        ),
        Setting(
            "HOME", "home", _path, "your home folder",
            "where LM Studio's, Ollama's and Hugging Face's folders are looked for",
        ),
    ),
    *_group(
        "command line and app",
        Setting(
            "LOCALLLM_DEBUG", "debug", _on, "off",
            "any value: an unexpected error shows its traceback, not one line",
        ),
    ),
    *_group(
        "installers",
        Setting(
            "LOCALLLM_LLAMA_BUILDS", None, _path, "localllm-llama-builds in pip's cache",
            "where installers/llama_build.py keeps the llama.cpp builds proved on this computer",
        ),
    ),
)  # fmt: skip
