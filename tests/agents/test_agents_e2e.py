"""The real agents, one-shot, with their default settings, started by ``localllm launch``
against the daemon serving a generated tiny model: each exits 0 with a reply, and the daemon
answered every request it sent.

The agents come from npm at pinned versions (``python -m tests.support.agents install``, which
``.ci/run`` runs when npm can reach its registry); an agent that is not installed is skipped,
saying so. Each run reads a first prompt of 10-40 thousand tokens: minutes on two busy cores.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support.agents import PACKAGES, agent_path, quiet_env
from tests.support.cli_e2e import cli_env, run_cli
from tests.support.daemon import Daemon
from tests.support.record_agents import DAEMON_ENV, ONE_SHOT, agent_store

# each first turn reads a prompt of 10-40 thousand tokens: minutes on two busy cores
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("agents-e2e")
    with Daemon(agent_store(root), root / "logs", env=DAEMON_ENV) as running:
        yield running


def installed(agent: str):
    package, version, _ = PACKAGES[agent]
    missing = pytest.mark.skipif(
        agent_path(agent) is None,
        reason=f"{package}@{version} is not installed: `python -m tests.support.agents "
        "install` installs it (npm needed)",
    )
    return pytest.param(agent, marks=missing)


@pytest.mark.parametrize("agent", [installed(agent) for agent in PACKAGES])
def test_the_agent_answers_one_shot_through_launch(daemon, agent, tmp_path):
    path = agent_path(agent)
    project = tmp_path / "project"
    project.mkdir()
    env = {**cli_env(tmp_path, daemon.port, PWD=str(project)), **quiet_env(tmp_path / "home")}
    env["PATH"] = f"{path.parent}{os.pathsep}{env['PATH']}"
    before = len(daemon.log().splitlines())
    args = ["launch", agent, "--model", "tiny", "--", *ONE_SHOT[agent]]
    result = run_cli(args, env, timeout=1800, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip(), result.stderr  # the reply
    sent = [
        json.loads(line)
        for line in daemon.log().splitlines()[before:]
        if line.startswith('{"event": "request"') and '"/v1/' in line
    ]
    assert sent and all(line["status"] == 200 for line in sent), sent
