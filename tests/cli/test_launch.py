"""``localllm launch`` against a real daemon, with a stand-in for each agent: an executable of
the agent's name on PATH that records what it was started with (arguments, environment, the
config file it was pointed at) and exits with a status of its own. The real agents run in
``tests/agents/test_agents_e2e.py``."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from model_registry.tiny_gguf import CHATML_TEMPLATE, write_tiny_model
from tests.support.cli_e2e import cli_env, run_cli
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

# ChatML that also lists the tools: the daemon says such a model has the "tools" capability
TOOLS_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    + CHATML_TEMPLATE
)
FAKE_AGENT = f"""#!{sys.executable}
import json, os, sys
config = os.environ.get("OPENCODE_CONFIG")
record = {{
    "argv": sys.argv[1:],
    "env": dict(os.environ),
    "config": open(config).read() if config else None,
    "config_mode": oct(os.stat(os.path.dirname(config)).st_mode & 0o777) if config else None,
}}
with open(os.environ["FAKE_AGENT_RECORD"], "w") as out:
    json.dump(record, out)
print("fake agent ran")
sys.exit(7)
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("launch")
    coder = write_tiny_model(
        root / "coder.gguf", chat_template=TOOLS_TEMPLATE, context_length=32768, seed=3
    )
    short = write_tiny_model(root / "short.gguf", chat_template=TOOLS_TEMPLATE, seed=4)
    plain = write_tiny_model(root / "plain.gguf", context_length=32768, seed=5)
    store = make_store(root / "store", {"coder": coder, "short": short, "plain": plain})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture
def agents(tmp_path) -> Path:
    """A folder with a stand-in for each agent."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("claude", "codex", "opencode"):
        path = folder / name
        path.write_text(FAKE_AGENT)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def env(daemon, agents, tmp_path) -> dict[str, str]:
    return {
        **cli_env(tmp_path, daemon.port),
        "PATH": f"{agents}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),
        "FAKE_AGENT_RECORD": str(tmp_path / "record.json"),
    }


def launched(env: dict[str, str]) -> dict:
    return json.loads(Path(env["FAKE_AGENT_RECORD"]).read_text())


def test_claude_gets_the_daemon_and_the_picked_model_in_its_environment(daemon, env):
    (Path(env["HOME"])).mkdir()
    result = run_cli(["launch", "claude", "--", "-p", "Say hello"], env)
    assert result.returncode == 7, result.stderr  # the agent's own status
    assert result.stdout == "fake agent ran\n"
    assert result.stderr == "starting Claude Code on coder:latest (context 32,768 tokens)\n"
    record = launched(env)
    assert record["argv"] == ["-p", "Say hello"]
    seen = record["env"]
    assert seen["ANTHROPIC_BASE_URL"] == daemon.url and seen["ANTHROPIC_API_KEY"] == ""
    assert seen["ANTHROPIC_AUTH_TOKEN"] == "localllm"  # no key needed on loopback
    for size in ("OPUS", "SONNET", "HAIKU"):
        assert seen[f"ANTHROPIC_DEFAULT_{size}_MODEL"] == "coder:latest"
    assert seen["ANTHROPIC_MODEL"] == seen["ANTHROPIC_SMALL_FAST_MODEL"] == "coder:latest"
    assert seen["HOME"] == env["HOME"] and seen["PATH"] == env["PATH"]  # the rest as it was
    assert list(Path(env["HOME"]).iterdir()) == []  # the user's own config is left alone


def test_codex_gets_a_model_provider_on_its_command_line(daemon, env):
    result = run_cli(["launch", "codex", "--model", "short", "--", "exec", "Hi"], env)
    assert result.returncode == 7, result.stderr
    warning = result.stderr.splitlines()[0]
    assert warning.startswith("warning: short was trained for 2,048 tokens of context, under")
    record = launched(env)
    *overrides, command, prompt = record["argv"]
    assert overrides[::2] == ["-c"] * 7 and (command, prompt) == ("exec", "Hi")
    assert dict(value.split("=", 1) for value in overrides[1::2]) == {
        "model_provider": '"localllm"',
        "model": '"short"',
        "model_context_window": "2048",
        "model_providers.localllm.name": '"localllm"',
        "model_providers.localllm.base_url": f'"{daemon.url}/v1"',
        "model_providers.localllm.wire_api": '"responses"',
        "model_providers.localllm.env_key": '"LOCALLLM_AGENT_KEY"',
    }
    assert record["env"]["LOCALLLM_AGENT_KEY"] == "localllm"


def test_opencode_gets_a_private_config_file(daemon, env):
    result = run_cli(["launch", "opencode", "--", "run", "Hi"], env)
    assert result.returncode == 7, result.stderr
    record = launched(env)
    assert record["argv"] == ["run", "Hi"] and record["config_mode"] == "0o700"
    config = json.loads(record["config"])
    provider = config["provider"]["localllm"]
    assert provider["options"] == {"baseURL": f"{daemon.url}/v1", "apiKey": "localllm"}
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["models"]["coder:latest"]["limit"] == {"context": 32768, "output": 8192}
    assert config["model"] == config["small_model"] == "localllm/coder:latest"


def test_print_shows_the_setup_and_starts_nothing(daemon, env):
    result = run_cli(["launch", "claude", "--model", "coder", "--print", "--", "-p", "Hi"], env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"# Claude Code on localllm at {daemon.url}: coder, context 32,768 tokens"
    assert f"export ANTHROPIC_BASE_URL={daemon.url}" in lines
    assert "export ANTHROPIC_API_KEY=''" in lines and lines[-1] == "claude -p Hi"
    assert not Path(env["FAKE_AGENT_RECORD"]).exists()
    shown = run_cli(["launch", "opencode", "--print"], env).stdout.splitlines()
    assert shown[1].startswith("# ") and shown[1].endswith("/opencode.json:")
    config = Path(shown[1][2:-1])
    assert json.loads(config.read_text())["model"] == "localllm/coder:latest"
    assert f"export OPENCODE_CONFIG={config}" in shown


def test_a_missing_agent_says_how_to_install_it(env):
    env = {**env, "PATH": os.path.dirname(sys.executable)}
    result = run_cli(["launch", "codex"], env)
    assert result.returncode == 1
    assert result.stderr == (
        "Error: Codex is not installed (no `codex` on PATH); install it with "
        "`npm install -g @openai/codex` and run this again\n"
    )


def test_a_named_model_that_falls_short_is_used_with_a_warning(env):
    result = run_cli(["launch", "opencode", "--model", "no-such-model"], env)
    assert result.returncode == 1 and "model 'no-such-model' not found" in result.stderr
    plain = run_cli(["launch", "opencode", "--model", "plain"], env)
    assert plain.returncode == 7
    assert plain.stderr.startswith("warning: plain has no tools capability")


def test_no_fitting_model_says_what_to_do(tmp_path, agents, env):
    plain = write_tiny_model(tmp_path / "plain.gguf", context_length=32768, seed=5)
    store = make_store(tmp_path / "store", {"plain": plain})
    with Daemon(store, tmp_path / "logs") as other:
        result = run_cli(["launch", "claude"], {**env, "LOCALLLM_HOST": f"127.0.0.1:{other.port}"})
    assert result.returncode == 1
    assert result.stderr == (
        "Error: no model here fits Claude Code: it needs tools and a context of at least 32,768 "
        "tokens. Pull one (`localllm pull qwen2.5-coder:7b`) or name one with --model\n"
    )
