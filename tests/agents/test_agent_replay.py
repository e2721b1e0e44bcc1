"""Claude Code's, Codex's and opencode's real requests, replayed against the real daemon.

The fixtures (``fixtures/<agent>.json``, recorded by ``tests/support/record_agents.py`` through
the recording proxy) hold each agent's first turn, the turn that answers a tool call it made,
and its side requests, exactly as sent: headers, query (``?beta=true``), 10-40 thousand tokens
of system prompt and tools. Each is answered by a generated tiny model whose replies end after
a few words, and read back with the official SDKs' types. Tool calls round-trip: the first turn
with that tool forced gives a call in the agent's own wire format (Codex's names its
namespace), and the recorded answer to it, pointed at that call, continues from the cached
prompt (the forced tool's strings are kept short on both turns, as when recording). A new
session with the same system prompt starts from the host cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.support.agent_answers import Answer, read_answer
from tests.support.daemon import Daemon
from tests.support.record_agents import DAEMON_ENV, agent_store
from tests.support.recording_proxy import forced_request

# each first turn reads a prompt of 10-40 thousand tokens: minutes on two busy cores
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

FIXTURES = Path(__file__).parent / "fixtures"
AGENTS = ("claude", "codex", "opencode")
NAMESPACED = {"close_agent": "multi_agent_v1"}  # Codex's forced tool lives in a namespace


def fixture(agent: str) -> dict:
    return json.loads((FIXTURES / f"{agent}.json").read_text())


def recorded(agent: str, kind: str) -> dict:
    (request,) = [r for r in fixture(agent)["requests"] if r["kind"] == kind]
    return request


def all_requests() -> list:
    return [
        pytest.param(agent, number, id=f"{agent}-{number}-{request['kind']}")
        for agent in AGENTS
        for number, request in enumerate(fixture(agent)["requests"])
    ]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("agent-replay")
    with Daemon(agent_store(root), root / "logs", env=DAEMON_ENV) as running:
        yield running


def replay(daemon: Daemon, request: dict, body: dict | None = None) -> Answer:
    query = f"?{request['query']}" if request["query"] else ""
    answer = httpx.post(
        daemon.url + request["path"] + query,
        json=request["body"] if body is None else body,
        headers=request["headers"],
        timeout=900,
    )
    assert answer.status_code == 200, answer.text
    return read_answer(request["path"], answer.text)


def test_every_agent_recorded_its_first_turn_and_a_tool_round_trip():
    for agent in AGENTS:
        recording = fixture(agent)
        kinds = [r["kind"] for r in recording["requests"]]
        assert recording["exit_status"] == 0, agent  # the agent was content with the answers
        assert kinds.count("first") == kinds.count("tool_result") == 1, (agent, kinds)
        assert all(r["status"] == 200 for r in recording["requests"]), agent


@pytest.mark.parametrize(("agent", "number"), all_requests())
def test_each_recorded_request_is_answered(daemon, agent, number):
    request = fixture(agent)["requests"][number]
    answer = replay(daemon, request)
    assert answer.finish in ("end_turn", "completed", "stop"), answer  # ended by the model
    assert answer.prompt_tokens > 0


@pytest.mark.parametrize("agent", AGENTS)
def test_a_tool_call_round_trips(daemon, agent):
    first, then = recorded(agent, "first"), recorded(agent, "tool_result")
    tool = fixture(agent)["forced_tool"]
    forced = forced_request(first["path"], first["body"], tool)  # its strings kept short
    made = replay(daemon, first, forced)
    (call,) = made.calls
    assert (call.name, call.namespace) == (tool, NAMESPACED.get(tool))
    # the recorded turn answered the call the agent got while recording: point it at this one
    old_id = _recorded_call_id(then["body"])
    body = json.loads(json.dumps(then["body"]).replace(old_id, call.id))
    answer = replay(daemon, then, {**body, "tools": forced["tools"]})
    assert answer.finish in ("end_turn", "completed", "stop"), answer
    assert answer.cached_tokens > 0.9 * made.prompt_tokens  # the first turn's prompt reused


def test_a_new_session_starts_from_the_cached_system_prompt(daemon):
    """One slot: Codex's turn pushes Claude Code's conversation out to the host cache, and a
    new Claude Code session (another question) reads its system prompt and tools from there."""
    first = recorded("claude", "first")
    replay(daemon, first)
    replay(daemon, recorded("codex", "first"))
    body = json.loads(json.dumps(first["body"]).replace("Say hello", "Say goodbye"))
    answer = replay(daemon, first, body)
    # all before the question: system prompt and tools (the environment comes after it)
    assert answer.cached_tokens > 0.75 * answer.prompt_tokens, answer


def _recorded_call_id(body: dict) -> str:
    """The id of the tool call a recorded turn answers."""
    items = body.get("messages") or body.get("input")
    for item in items:
        for block in item.get("content") or () if isinstance(item.get("content"), list) else ():
            if block.get("type") == "tool_result":
                return block["tool_use_id"]
        if item.get("type") == "function_call_output" or item.get("role") == "tool":
            return item.get("call_id") or item["tool_call_id"]
    raise AssertionError("the recorded turn answers no tool call")
