"""The daemon's configuration: one frozen object, built once at the entry point from the
environment (prefix ``LOCALLLM_``) and passed down. Nothing else in the project reads
``os.environ``: even the environment a runner starts with is decided here (``runner_env``).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, get_args

import platformdirs

from localllm.daemon.runners.types import BackendSampling
from localllm.model_registry.parameters import (
    FLASH_ATTENTION,
    KV_CACHE_TYPES,
    FlashAttention,
    KvCacheType,
)

__all__ = [
    "DEFAULT_PORT",
    "MAX_KEEP_ALIVE_SECONDS",
    "PROMPT_CACHE_CAP",
    "Settings",
    "parse_host",
    "prompt_cache_default",
    "runner_environment",
]

DEFAULT_PORT = 11435
MAX_KEEP_ALIVE_SECONDS = 1e9  # about 31 years; a negative keep_alive is "for ever"
_APP = "localllm"
PROMPT_CACHE_CAP = 20 << 30  # the most the prompt cache on disk takes unless set (20 GiB)
_GIB = 1 << 30  # LOCALLLM_PROMPT_CACHE_GB counts GiB, as LOCALLLM_HOST_CACHE_MB counts MiB
BACKEND_SAMPLING: tuple[BackendSampling, ...] = get_args(BackendSampling)  # its env choices
_Choice = TypeVar("_Choice", bound=str)  # one of a setting's fixed choices

# What the daemon's children (runners, the quantizer) see of its environment. They parse
# untrusted GGUF files in native code, so secrets (LOCALLLM_API_KEY, HF_TOKEN, any cloud
# credential) stay behind: only what loading libraries, the locale, the GPU and llama.cpp need.
_RUNNER_NAMES = frozenset(
    {
        "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP", "TEMP",
        "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FALLBACK_LIBRARY_PATH",
        "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "LOCALAPPDATA",
        "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
    }
)  # fmt: skip
_RUNNER_PREFIXES = (
    "LC_", "PYTHON", "GGML_", "LLAMA_", "OMP_", "KMP_", "GOMP_", "OPENBLAS_", "MKL_",
    "CUDA_", "HIP_", "ROCM_", "ROCR_", "HSA_", "GPU_", "VK_", "ONEAPI_", "SYCL_", "ZE_",
    "CT2_",  # CTranslate2's, for the transcription runner
)  # fmt: skip


def runner_environment(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables of ``env`` a runner may see (names compared as Windows does, any case)."""
    return tuple(
        (name, value)
        for name, value in sorted(env.items())
        if name.upper() in _RUNNER_NAMES or name.upper().startswith(_RUNNER_PREFIXES)
    )


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


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from None


def _positive(env: Mapping[str, str], key: str, default: int) -> int:
    value = _int(env, key, default)
    if value < 1:
        raise ValueError(f"{key} must be at least 1, got {value}")
    return value


def _choice(
    env: Mapping[str, str], key: str, default: _Choice, choices: tuple[_Choice, ...]
) -> _Choice:
    raw = env.get(key, "").strip().lower()
    if not raw:
        return default
    for choice in choices:
        if raw == choice:
            return choice
    raise ValueError(f"{key} must be one of {', '.join(choices)}, got {raw!r}")


def _float(env: Mapping[str, str], key: str, default: float) -> float:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None


def _keep_alive(env: Mapping[str, str], key: str, default: float) -> float:
    value = _float(env, key, default)
    if not math.isfinite(value) or value > MAX_KEEP_ALIVE_SECONDS:
        raise ValueError(
            f"{key} must be a number of seconds up to {MAX_KEEP_ALIVE_SECONDS:,.0f}, or "
            f"negative to keep models loaded for ever, got {value:g}"
        )
    return value


def _seconds(env: Mapping[str, str], key: str, default: float) -> float:
    value = _float(env, key, default)
    if not math.isfinite(value) or not value > 0:
        raise ValueError(f"{key} must be a number of seconds above 0, got {value:g}")
    return value


def prompt_cache_default(free_bytes: int) -> int:
    """The prompt cache's size when unset: a tenth of the data disk's free space, at most
    ``PROMPT_CACHE_CAP``."""
    return min(PROMPT_CACHE_CAP, max(0, free_bytes) // 10)


def _prompt_cache_bytes(env: Mapping[str, str], key: str, data_dir: Path) -> int:
    """``key`` in GiB (0: off), or the default from the free space of ``data_dir``'s disk,
    read here, once, as the daemon starts: never again, so the cache's own files, written
    later, do not shrink it."""
    if not env.get(key, "").strip():
        return prompt_cache_default(_free_bytes(data_dir))
    gib = _float(env, key, 0.0)
    if not math.isfinite(gib) or gib < 0:
        raise ValueError(
            f"{key} must be a number of GiB, 0 or more (0 turns the prompt cache off), got {gib:g}"
        )
    return int(gib * _GIB)


def _free_bytes(folder: Path) -> int:
    """Free bytes on the disk holding ``folder``, asked of its nearest existing folder (it
    may not exist yet); 0 when none can be read."""
    for candidate in (folder, *folder.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return 0


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    models_dir: Path = field(
        default_factory=lambda: Path(platformdirs.user_data_dir(_APP)) / "models"
    )
    data_dir: Path = field(default_factory=lambda: Path(platformdirs.user_data_dir(_APP)))
    config_dir: Path = field(default_factory=lambda: Path(platformdirs.user_config_dir(_APP)))
    log_dir: Path = field(default_factory=lambda: Path(platformdirs.user_log_dir(_APP)))
    catalog_path: Path | None = None
    hf_endpoint: str | None = None
    hf_token: str | None = None
    api_key: str | None = field(default=None, repr=False)
    # what remotes' changes need besides loopback; None: the daemon's admin_token file
    admin_token: str | None = field(default=None, repr=False)
    origins: tuple[str, ...] = ()
    keep_alive_seconds: float = 300.0
    max_loaded_models: int = 0  # 0: decided by memory
    max_queue: int = 512
    num_parallel: int = 0  # 0: 4, or more where a GPU holds the model (``scheduler.parallel``)
    num_ctx: int = 0  # 0: sized per model from its trained context and free memory
    context_cap: int = 32768  # the most that sizing picks (a larger num_ctx may be asked)
    num_threads: int | None = None
    kv_cache_type: KvCacheType = "f16"  # the K/V cache of models that do not set kv_cache_type
    flash_attention: FlashAttention = "auto"
    backend_sampling: BackendSampling = "auto"  # sampling inside the decode ("auto": on a GPU)
    host_cache_mib: int = 1024  # per runner: KV of sequences evicted from slots (0: off)
    # the prompt cache on disk, shared by every runner (``prompt_cache_dir``); 0: off.
    # ``from_env`` sizes it from the data disk when LOCALLLM_PROMPT_CACHE_GB is unset
    prompt_cache_bytes: int = 0
    max_pulls: int = 3  # pulls that download at once; the others wait, queued
    header_timeout: float = 30.0  # seconds a request's headers may take to arrive, in all
    body_timeout: float = 60.0  # seconds a request body may stall (not its whole upload)
    remote_check_interval: float = 10.0  # seconds between health checks of remotes
    log_max_bytes: int = 10 << 20  # daemon.log rolls over past this (3 older files kept)
    # the daemon's environment, for the variables remotes name for their keys (never logged)
    environment: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    runner_env: tuple[tuple[str, str], ...] = field(
        default_factory=lambda: runner_environment(os.environ)
    )
    # Where other apps keep models (scanned for "already on this computer"); never a request's.
    home: Path = field(default_factory=Path.home)
    hf_hub_cache: Path | None = None  # HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/...
    ollama_models: Path | None = None  # OLLAMA_MODELS, else ~/.ollama/models
    import_dirs: tuple[Path, ...] = ()  # LOCALLLM_IMPORT_DIRS, separated by os.pathsep

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def prompt_cache_dir(self) -> Path:
        """Where runners keep the KV state of long prompts, for a later runner to resume."""
        return self.data_dir / "prompt-cache"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        host, port = parse_host(env.get("LOCALLLM_HOST", "") or "127.0.0.1")
        base = cls()
        data_dir = Path(env["LOCALLLM_DATA"]) if env.get("LOCALLLM_DATA") else base.data_dir
        return cls(
            host=host,
            port=port,
            models_dir=Path(env["LOCALLLM_MODELS"]).expanduser()
            if env.get("LOCALLLM_MODELS")
            else data_dir / "models",
            data_dir=data_dir,
            config_dir=Path(env["LOCALLLM_CONFIG"])
            if env.get("LOCALLLM_CONFIG")
            else base.config_dir,
            log_dir=Path(env["LOCALLLM_LOGS"]) if env.get("LOCALLLM_LOGS") else data_dir / "logs",
            catalog_path=Path(env["LOCALLLM_CATALOG"]) if env.get("LOCALLLM_CATALOG") else None,
            hf_endpoint=env.get("HF_ENDPOINT") or None,
            hf_token=env.get("HF_TOKEN") or None,
            api_key=env.get("LOCALLLM_API_KEY") or None,
            admin_token=env.get("LOCALLLM_ADMIN_TOKEN") or None,
            origins=tuple(
                o.strip() for o in env.get("LOCALLLM_ORIGINS", "").split(",") if o.strip()
            ),
            keep_alive_seconds=_keep_alive(env, "LOCALLLM_KEEP_ALIVE", base.keep_alive_seconds),
            max_loaded_models=_int(env, "LOCALLLM_MAX_LOADED_MODELS", 0),
            max_queue=_int(env, "LOCALLLM_MAX_QUEUE", base.max_queue),
            num_parallel=_int(env, "LOCALLLM_NUM_PARALLEL", base.num_parallel),
            num_ctx=_int(env, "LOCALLLM_CONTEXT_LENGTH", base.num_ctx),
            context_cap=_positive(env, "LOCALLLM_CONTEXT_CAP", base.context_cap),
            num_threads=_int(env, "LOCALLLM_NUM_THREADS", 0) or None,
            kv_cache_type=_choice(env, "LOCALLLM_KV_CACHE_TYPE", "f16", KV_CACHE_TYPES),
            flash_attention=_choice(env, "LOCALLLM_FLASH_ATTENTION", "auto", FLASH_ATTENTION),
            backend_sampling=_choice(env, "LOCALLLM_BACKEND_SAMPLING", "auto", BACKEND_SAMPLING),
            host_cache_mib=_int(env, "LOCALLLM_HOST_CACHE_MB", base.host_cache_mib),
            prompt_cache_bytes=_prompt_cache_bytes(env, "LOCALLLM_PROMPT_CACHE_GB", data_dir),
            max_pulls=_positive(env, "LOCALLLM_MAX_PULLS", base.max_pulls),
            header_timeout=_seconds(env, "LOCALLLM_HEADER_TIMEOUT", base.header_timeout),
            body_timeout=_seconds(env, "LOCALLLM_BODY_TIMEOUT", base.body_timeout),
            remote_check_interval=_seconds(
                env, "LOCALLLM_REMOTE_CHECK_INTERVAL", base.remote_check_interval
            ),
            log_max_bytes=_positive(env, "LOCALLLM_LOG_MAX_BYTES", base.log_max_bytes),
            environment=dict(env),
            runner_env=runner_environment(env),
            home=Path(env["HOME"]) if env.get("HOME") else base.home,
            hf_hub_cache=_hf_hub_cache(env),
            ollama_models=Path(env["OLLAMA_MODELS"]) if env.get("OLLAMA_MODELS") else None,
            import_dirs=tuple(
                Path(p).expanduser()
                for p in env.get("LOCALLLM_IMPORT_DIRS", "").split(os.pathsep)
                if p.strip()
            ),
        )


def _hf_hub_cache(env: Mapping[str, str]) -> Path | None:
    """Where huggingface_hub keeps its cache, by the same variables it reads."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return None
