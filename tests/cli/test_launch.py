"""``localllm launch`` against a real daemon, with a stand-in for each agent: an executable of
the agent's name on PATH that records what it was started with (arguments, environment, the
config file it was pointed at) and exits with a status of its own. The real agents run in
``tests/agents/test_agents_e2e.py``."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from localllm.model_registry.tiny_gguf import CHATML_TEMPLATE, write_tiny_model
from tests.support.cli_e2e import CLI, cli_env, run_cli
from tests.support.daemon import ROOT, Daemon, make_store

pytestmark = pytest.mark.slow

# ChatML that also lists the tools: the daemon says such a model has the "tools" capability
TOOLS_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    + CHATML_TEMPLATE
)
FAKE_AGENT = f"""#!{sys.executable}
import json, os, signal, sys
config = os.environ.get("OPENCODE_CONFIG")
record = {{
    "argv": sys.argv[1:],
    "env": dict(os.environ),
    "config": open(config).read() if config else None,
    "config_mode": oct(os.stat(os.path.dirname(config)).st_mode & 0o777) if config else None,
    "file_mode": oct(os.stat(config).st_mode & 0o777) if config else None,
}}
with open(os.environ["FAKE_AGENT_RECORD"], "w") as out:
    json.dump(record, out)
print("fake agent ran", flush=True)
then = os.environ.get("FAKE_AGENT_THEN")
if then == "ctrl-c":  # the terminal sends Ctrl-C to its whole process group; agents handle it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.killpg(0, signal.SIGINT)
elif then == "wait":  # until a signal ends it
    sys.stdin.read()
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
    (tmp_path / "tmp").mkdir()
    return {
        **cli_env(tmp_path, daemon.port),
        "PATH": f"{agents}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),  # where the agent's private folder goes
        "FAKE_AGENT_RECORD": str(tmp_path / "record.json"),
    }


def launched(env: dict[str, str]) -> dict:
    return json.loads(Path(env["FAKE_AGENT_RECORD"]).read_text())


def left_behind(env: dict[str, str]) -> list[str]:
    """What launch left in the temporary folder."""
    return sorted(path.name for path in Path(env["TMPDIR"]).iterdir())


def start_launch(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """``localllm launch ...`` in a process group of its own, as a terminal runs a command:
    a signal the fake agent sends to its group reaches no test process."""
    return subprocess.Popen(
        [*CLI, "launch", *args],
        env=env,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


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


def test_opencode_gets_a_private_config_file_that_goes_with_it(daemon, env):
    result = run_cli(["launch", "opencode", "--", "run", "Hi"], env)
    assert result.returncode == 7, result.stderr
    record = launched(env)
    assert record["argv"] == ["run", "Hi"]
    assert record["config_mode"] == "0o700" and record["file_mode"] == "0o600"
    assert Path(record["env"]["OPENCODE_CONFIG"]).parent.parent == Path(env["TMPDIR"])
    assert left_behind(env) == []  # the key left with the agent
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
    work = Path(env["HOME"]).parent / "work"
    work.mkdir()
    shown = run_cli(["launch", "opencode", "--print"], env, cwd=work).stdout.splitlines()
    assert shown[1] == "# save as opencode.json here (it holds the API key: keep it private):"
    export = shown.index(f"export OPENCODE_CONFIG={work / 'opencode.json'}")
    assert json.loads("\n".join(shown[2:export]))["model"] == "localllm/coder:latest"
    assert list(work.iterdir()) == [] and left_behind(env) == []  # shown, not written


def test_the_private_folder_outlives_no_ctrl_c(daemon, env):
    """Ctrl-C reaches the agent and launch alike: the agent decides (it goes on here), and
    launch waits for it, then removes the folder and passes on the agent's status."""
    launch = start_launch(["opencode"], {**env, "FAKE_AGENT_THEN": "ctrl-c"})
    out, err = launch.communicate(timeout=120)
    assert launch.returncode == 7, err
    assert out == "fake agent ran\n" and "Traceback" not in err
    assert launched(env)["file_mode"] == "0o600" and left_behind(env) == []


def test_a_terminate_is_passed_on_to_the_agent_and_the_folder_still_goes(daemon, env):
    launch = start_launch(["opencode"], {**env, "FAKE_AGENT_THEN": "wait"})
    assert launch.stdout.readline() == "fake agent ran\n"  # it runs, its config is there
    assert left_behind(env) != []
    launch.send_signal(signal.SIGTERM)  # to launch alone, as `kill` does
    _, err = launch.communicate(timeout=120)
    assert launch.returncode == 128 + signal.SIGTERM, err  # the agent's end, as a shell says
    assert left_behind(env) == []


def test_an_agent_that_cannot_start_leaves_no_folder(agents, env):
    (agents / "opencode").write_bytes(b"\x7fELF but not a program")
    result = run_cli(["launch", "opencode"], env)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "Error: opencode could not be started (Exec format error); reinstall it with "
        "`npm install -g opencode-ai`"
    )
    assert left_behind(env) == []


def test_an_agent_in_the_current_folder_is_never_run(tmp_path, agents, env):
    """PATH with '.' (or an empty entry) names whatever folder launch runs in: a cloned
    repository's ``claude`` would run with the user's rights."""
    work = tmp_path / "repository"
    work.mkdir()
    os.replace(agents / "claude", work / "claude")
    path = f".{os.pathsep}{os.pathsep}{agents}{os.pathsep}{os.path.dirname(sys.executable)}"
    result = run_cli(["launch", "claude"], {**env, "PATH": path}, cwd=work)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: Claude Code is not installed (no `claude` on PATH)")
    assert not Path(env["FAKE_AGENT_RECORD"]).exists()


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
