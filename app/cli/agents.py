"""The coding agents ``localllm launch`` starts, and how each is pointed at the daemon.

Each agent is told the daemon's address, a key, the model and the context that model runs
with, through what it reads, never by editing the user's own configuration: Claude Code
through environment variables (its Anthropic base URL and model names), Codex through ``-c``
overrides on its command line (a ``localllm`` model provider on the Responses API), opencode
through a config file in a private temporary folder (``OPENCODE_CONFIG``; opencode merges it
with the user's own). That file holds the key: ``launch`` writes it 0600 and removes the folder
when the agent exits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["AGENTS", "MIN_CONTEXT", "Agent", "Setup", "Target"]

MIN_CONTEXT = 32768  # tokens: an agent's first turn is 10-40k (system prompt and tools)
_PROVIDER = "localllm"
_KEY_VARIABLE = "LOCALLLM_AGENT_KEY"  # where Codex reads the key from


@dataclass(frozen=True, slots=True)
class Target:
    """What an agent connects to."""

    url: str  # the daemon, e.g. http://127.0.0.1:11435
    key: str  # the API key to send (a placeholder when the daemon needs none)
    model: str
    context: int  # tokens the model runs with, so the agent compacts before it overflows


@dataclass(frozen=True, slots=True)
class Setup:
    """How to start an agent: variables added to its environment, arguments before the
    user's own, and files to write into the private folder first."""

    env: dict[str, str]
    args: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # name in the folder -> content


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # as ``localllm launch`` takes it
    title: str
    program: str  # the executable
    package: str  # its npm package, for the install hint
    setup: Callable[[Target, Path], Setup]  # (target, private folder) -> setup

    @property
    def install_hint(self) -> str:
        return f"npm install -g {self.package}"


def _claude(target: Target, folder: Path) -> Setup:
    """Claude Code speaks Anthropic's Messages API; every model it may pick is the local one."""
    models: tuple[str, ...] = ("ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL")
    models += tuple(f"ANTHROPIC_DEFAULT_{size}_MODEL" for size in ("OPUS", "SONNET", "HAIKU"))
    return Setup(
        env={
            "ANTHROPIC_BASE_URL": target.url,
            "ANTHROPIC_AUTH_TOKEN": target.key,
            "ANTHROPIC_API_KEY": "",  # a real Anthropic key is never sent to the daemon
            **dict.fromkeys(models, target.model),
        }
    )


def _codex(target: Target, folder: Path) -> Setup:
    """Codex speaks only the Responses API, to a model provider named in its config."""
    provider = f"model_providers.{_PROVIDER}"
    settings = {
        "model_provider": _PROVIDER,
        "model": target.model,
        "model_context_window": target.context,
        f"{provider}.name": _PROVIDER,
        f"{provider}.base_url": f"{target.url}/v1",
        f"{provider}.wire_api": "responses",
        f"{provider}.env_key": _KEY_VARIABLE,
    }
    args = [part for key, value in settings.items() for part in ("-c", _toml(key, value))]
    return Setup(env={_KEY_VARIABLE: target.key}, args=tuple(args))


def _opencode(target: Target, folder: Path) -> Setup:
    """opencode reads chat completions through its OpenAI-compatible provider package."""
    limit = {"context": target.context, "output": min(8192, target.context // 4)}
    model = {"name": target.model, "tool_call": True, "limit": limit}
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            _PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": _PROVIDER,
                "options": {"baseURL": f"{target.url}/v1", "apiKey": target.key},
                "models": {target.model: model},
            }
        },
        "model": f"{_PROVIDER}/{target.model}",
        "small_model": f"{_PROVIDER}/{target.model}",  # titles and summaries stay local too
    }
    return Setup(
        env={"OPENCODE_CONFIG": str(folder / "opencode.json")},
        files={"opencode.json": json.dumps(config, indent=2) + "\n"},
    )


def _toml(key: str, value: object) -> str:
    """``key=value`` as Codex's ``-c`` takes it (a TOML value; JSON strings are TOML's)."""
    return f"{key}={json.dumps(value)}"


AGENTS: Mapping[str, Agent] = {
    "claude": Agent("claude", "Claude Code", "claude", "@anthropic-ai/claude-code", _claude),
    "codex": Agent("codex", "Codex", "codex", "@openai/codex", _codex),
    "opencode": Agent("opencode", "opencode", "opencode", "opencode-ai", _opencode),
}
