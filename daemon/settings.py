"""The daemon's configuration: one frozen object, built once at the entry point from the
environment and passed down. Which variables there are, how each is read and what each does is
declared once, in ``setting_table.SETTINGS``; this module parses from it and describes from it
(``localllm serve --help``, the app's Settings page, docs/configuration.md). Nothing else in
the project reads ``os.environ``: even the environment a runner starts with is decided here
(``runner_env``).

``python -m localllm.daemon.settings --markdown docs/configuration.md`` regenerates the docs'
table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from localllm.daemon.runners.types import BackendSampling
from localllm.daemon.setting_table import (
    DEFAULT_PORT,
    MAX_KEEP_ALIVE_SECONDS,
    PROMPT_CACHE_CAP,
    SETTINGS,
    Setting,
    parse_host,
)
from localllm.model_registry.parameters import FlashAttention, KvCacheType

__all__ = [
    "DEFAULT_PORT",
    "MARKDOWN_BEGIN",
    "MARKDOWN_END",
    "MAX_KEEP_ALIVE_SECONDS",
    "PROMPT_CACHE_CAP",
    "REGENERATE_DOCS",
    "SETTINGS",
    "Setting",
    "SettingRow",
    "Settings",
    "environment_help",
    "markdown_table",
    "parse_host",
    "prompt_cache_default",
    "runner_environment",
    "settings_rows",
    "write_markdown",
]

_APP = "localllm"
_GIB = 1 << 30
MARKDOWN_BEGIN = "<!-- settings:begin -->"  # docs/configuration.md's table lies between these
MARKDOWN_END = "<!-- settings:end -->"
REGENERATE_DOCS = "python -m localllm.daemon.settings --markdown docs/configuration.md"

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


def prompt_cache_default(free_bytes: int) -> int:
    """The prompt cache's size when unset: a tenth of the data disk's free space, at most
    ``PROMPT_CACHE_CAP``."""
    return min(PROMPT_CACHE_CAP, max(0, free_bytes) // 10)


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
    debug: bool = False  # the CLI shows an unexpected error's traceback
    # the variables that were set (not blank): what the user chose, not a default
    given: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def address(self) -> str:
        """``host:port``, as LOCALLLM_HOST takes it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.address}"

    @property
    def prompt_cache_dir(self) -> Path:
        """Where runners keep the KV state of long prompts, for a later runner to resume."""
        return self.data_dir / "prompt-cache"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Parse every variable ``SETTINGS`` declares for the daemon (None: this process's
        environment); raises ValueError for a bad value, saying what is allowed."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        given: set[str] = set()
        for setting in SETTINGS:
            if setting.field is None:
                continue  # the installers' own
            raw = env.get(setting.name, "")
            if raw.strip():  # blank counts as unset
                values[setting.field] = setting.parse(raw, setting.name)
                given.add(setting.name)
        host, port = values.pop("address", ("127.0.0.1", DEFAULT_PORT))
        data_dir = values.setdefault("data_dir", Path(platformdirs.user_data_dir(_APP)))
        values.setdefault("models_dir", data_dir / "models")
        values.setdefault("log_dir", data_dir / "logs")
        if "prompt_cache_bytes" not in values:  # read once, as the daemon starts: never again,
            # so the cache's own files, written later, do not shrink it
            values["prompt_cache_bytes"] = prompt_cache_default(_free_bytes(data_dir))
        return cls(
            host=host,
            port=port,
            **values,
            environment=dict(env),
            runner_env=runner_environment(env),
            given=frozenset(given),
        )


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One daemon setting as the app's Settings page shows it."""

    group: str
    name: str  # the environment variable
    value: str  # the value in effect, as people read it (a secret only says it is set)
    help: str
    given: bool  # set in the environment, not the default


def settings_rows(settings: Settings) -> tuple[SettingRow, ...]:
    """The settings ``settings`` holds, one row per variable, in the table's order."""
    return tuple(
        SettingRow(
            setting.group,
            setting.name,
            _shown(setting, getattr(settings, setting.field)),
            setting.description,
            setting.name in settings.given,
        )
        for setting in SETTINGS
        if setting.field is not None
    )


def _shown(setting: Setting, value: object) -> str:
    if value is None or value == () or value is False:
        return setting.default
    if setting.secret:
        return "set"
    if setting.field == "prompt_cache_bytes" and isinstance(value, int):
        return f"{value / _GIB:.3g} GiB" if value else "0 (off)"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ", ".join(str(part) for part in value)
    return "on" if value is True else str(value)


def environment_help(width: int = 100) -> str:
    """The variables for ``--help``, a section per group, each line with its default."""
    column = max(len(setting.name) for setting in SETTINGS) + 4
    sections = []
    for group, settings in _groups():
        lines = [f"environment ({group}):"]
        for setting in settings:
            text = f"{setting.description} (default: {setting.default})"
            first, *rest = textwrap.wrap(text, width - column)
            lines.append(f"  {setting.name:<{column - 2}}{first}")
            lines += [" " * column + line for line in rest]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def markdown_table() -> str:
    """The docs' configuration table: a heading and a table per group."""
    sections = []
    for group, settings in _groups():
        rows = [f"### {group[0].upper()}{group[1:]}", "", "| Variable | Default | What it does |"]
        rows.append("| --- | --- | --- |")
        for setting in settings:
            cells = (f"`{setting.name}`", setting.default, setting.description)
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        sections.append("\n".join(rows))
    return "\n\n".join(sections)


def _groups() -> Iterator[tuple[str, list[Setting]]]:
    groups: dict[str, list[Setting]] = {}
    for setting in SETTINGS:
        groups.setdefault(setting.group, []).append(setting)
    yield from groups.items()


def write_markdown(path: Path) -> bool:
    """Put the generated table between the markers of ``path``; True when that changed it."""
    text = path.read_text(encoding="utf-8")
    before, begin, rest = text.partition(MARKDOWN_BEGIN)
    _old, end, after = rest.partition(MARKDOWN_END)
    if not begin or not end:
        raise ValueError(f"{path} has no {MARKDOWN_BEGIN} ... {MARKDOWN_END} markers")
    new = f"{before}{begin}\n{markdown_table()}\n{end}{after}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localllm.daemon.settings", description="describe the settings"
    )
    parser.add_argument(
        "--markdown",
        nargs="?",
        const="-",
        metavar="FILE",
        help="the configuration table as Markdown: printed, or written into FILE's markers",
    )
    args = parser.parse_args(argv)
    if args.markdown in (None, "-"):
        print(markdown_table() if args.markdown else environment_help())
        return 0
    changed = write_markdown(Path(args.markdown))
    print(f"{args.markdown}: {'updated' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
