"""Record the coding agents' real requests as the fixtures ``tests/agents`` replays.

    python -m tests.support.record_agents [claude codex opencode]

For each agent (installed by ``python -m tests.support.agents install``): a daemon serving a
tiny model, the recording proxy in front of it forcing one tool call, and the agent started
one-shot by ``localllm launch`` through the proxy. The agent's first turn, the turn that
answers the tool call it made (so a tool round trip), and any side request (opencode's title)
are written to ``tests/agents/fixtures/<agent>.json``, as sent: only the API key is left out.
Takes minutes: every first turn is a prompt of 10-40 thousand tokens.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from tests.support.agents import PACKAGES, agent_path, quiet_env
from tests.support.cli_e2e import CLI, cli_env
from tests.support.daemon import ROOT, Daemon, free_port
from tests.support.polling import wait_for

__all__ = ["FIXTURES", "ONE_SHOT", "TOOLS", "agent_store", "request_kind"]

FIXTURES = ROOT / "tests" / "agents" / "fixtures"
PROMPT = "Say hello"
ONE_SHOT = {  # the agent's arguments for one answer, then exit
    "claude": ["-p", PROMPT],
    "codex": ["-c", "check_for_update_on_startup=false", "exec", "--skip-git-repo-check", PROMPT],
    "opencode": ["run", PROMPT],
}
TOOLS = {  # the tool each recording forces: harmless, and one of Codex's namespaced ones
    "claude": "Read",
    "codex": "close_agent",
    "opencode": "read",
}
# room for an agent's prompt on the generated vocabulary; one slot, so a new conversation moves
# the last one to the host cache; both cores, for prompts of 10-40 thousand tokens
DAEMON_ENV = {
    "LOCALLLM_CONTEXT_LENGTH": "65536",
    "LOCALLLM_NUM_PARALLEL": "1",
    "LOCALLLM_NUM_THREADS": "2",
}


def agent_store(root: Path) -> Path:
    """A store holding ``tiny``: a generated model whose answers end after a few words, as an
    agent waits for, with room for an agent's prompt."""
    from localllm.model_registry.tiny_gguf import write_tiny_model
    from tests.support.daemon import make_store

    root.mkdir(parents=True, exist_ok=True)
    path = write_tiny_model(
        root / "tiny.gguf", context_length=131072, file_type="Q8_0", seed=2, end_of_turn="soon"
    )
    return make_store(root / "store", {"tiny": path})


def request_kind(body: dict) -> str:
    """``tool_result`` for a turn that answers tool calls, ``side`` for one offering no tools
    (a title), else ``first``."""
    text = json.dumps(body.get("messages") or body.get("input") or [])
    if any(mark in text for mark in ('"tool_result"', '"function_call_output"', '"role": "tool"')):
        return "tool_result"
    return "first" if body.get("tools") else "side"


def record(name: str, tmp: Path) -> dict:
    store = agent_store(tmp / "store")
    with Daemon(store, tmp / "logs", env=DAEMON_ENV) as daemon:
        port = free_port()
        out = tmp / f"{name}.jsonl"
        proxy_args = ["--upstream", daemon.url, "--port", str(port), "--out", str(out)]
        proxy_args += ["--force-tool", TOOLS[name]]
        proxy = subprocess.Popen(
            [sys.executable, "-m", "tests.support.recording_proxy", *proxy_args], cwd=ROOT
        )
        try:
            assert wait_for(lambda: _answers(port), 30), "the recording proxy did not start"
            project = tmp / "project"
            project.mkdir()
            env = cli_env(tmp, port, **quiet_env(tmp / "home"), PWD=str(project))
            env["PATH"] = f"{agent_path(name).parent}:{env['PATH']}"
            args = ["launch", name, "--model", "tiny", "--", *ONE_SHOT[name]]
            done = subprocess.run(
                [*CLI, *args], cwd=project, env={**env, "PYTHONPATH": str(ROOT)},
                capture_output=True, text=True, timeout=3600,
            )  # fmt: skip
            print(done.stdout, done.stderr, sep="\n")
        finally:
            proxy.terminate()
            proxy.wait(10)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    requests = [
        {"kind": request_kind(r["body"]), **{k: r[k] for k in _KEPT}}
        for r in records
        if r["method"] == "POST" and r["path"].startswith("/v1/")
    ]
    package, version, _ = PACKAGES[name]
    return {
        "agent": f"{package}@{version}",
        "command": shlex.join(
            ["localllm", "launch", name, "--model", "tiny", "--", *ONE_SHOT[name]]
        ),
        "forced_tool": TOOLS[name],
        "exit_status": done.returncode,
        "requests": requests,
    }


_KEPT = ("method", "path", "query", "headers", "body", "status")


def _answers(port: int) -> bool:
    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
        return True
    except httpx.TransportError:
        return False


def main(names: list[str]) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in names or list(PACKAGES):
        with tempfile.TemporaryDirectory() as tmp:
            fixture = record(name, Path(tmp))
        path = FIXTURES / f"{name}.json"
        path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
        kinds = [r["kind"] for r in fixture["requests"]]
        print(f"{path}: {kinds}, exit status {fixture['exit_status']}")


if __name__ == "__main__":
    main(sys.argv[1:])
