"""Remotes through a real front daemon: two real ``localllm serve`` daemons (needing an API
key) as replicas of one remote, reached with the official ``openai``, ``ollama`` and
``anthropic`` packages; ``/api/remotes`` validation; keys never written or shown."""

from __future__ import annotations

import json
import stat

import anthropic
import httpx
import ollama
import pytest

from tests.support.daemon import Daemon, make_store, metric_value
from tests.support.remotes import add_remote, front_daemon, remove_remote

pytestmark = pytest.mark.slow

KEY = "team-secret-key-123"
HI = [{"role": "user", "content": "Hello there"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 8}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def backs(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("remote-backs")
    env = {"LOCALLLM_API_KEY": KEY}
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "a", env=env) as a, Daemon(store, root / "b", env=env) as b:
        yield a, b


@pytest.fixture(scope="module")
def front(tmp_path_factory, backs):
    root = tmp_path_factory.mktemp("remote-front")
    with front_daemon(root, env={"TEAM_KEY": KEY}) as daemon:
        added = add_remote(daemon, "team", [b.url for b in backs], api_key=KEY)
        assert added.status_code == 200, added.text
        daemon.config_dir = root / "config"
        yield daemon


def test_remote_models_are_listed_marked_with_their_remote(front):
    info = httpx.get(front.url + "/api/remotes", timeout=10).json()["remotes"][0]
    assert info["name"] == "team" and info["healthy"] and info["has_api_key"]
    assert {"name": "team/tiny", "remote_id": "tiny"} in info["models"]
    assert all(r["healthy"] and r["latency_ms"] is not None for r in info["replicas"])
    tags = httpx.get(front.url + "/api/tags", timeout=10).json()["models"]
    assert {m["name"]: m["remote"] for m in tags} == {"team/tiny": "team"}
    models = front.openai().models.list().data
    assert [(m.id, m.owned_by) for m in models] == [("team/tiny", "team")]
    assert front.openai().models.retrieve("team/tiny").owned_by == "team"


def test_openai_package_chat_and_stream_through_the_front(front):
    client = front.openai()
    whole = client.chat.completions.create(model="team/tiny", messages=HI, max_tokens=8)
    assert whole.model == "team/tiny" and whole.choices[0].finish_reason == "length"
    assert whole.usage.completion_tokens == 8 and whole.usage.prompt_tokens > 0
    chunks = list(
        client.chat.completions.create(
            model="team/tiny", messages=HI, max_tokens=8, stream=True,
            stream_options={"include_usage": True},
        )
    )  # fmt: skip
    text = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(text) >= 2  # token by token, not one block
    assert chunks[-1].usage.completion_tokens == 8


def test_forced_tool_call_comes_back_as_a_tool_call(front):
    reply = front.openai().chat.completions.create(
        model="team/tiny", messages=HI, max_tokens=64, tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )  # fmt: skip
    call = reply.choices[0].message.tool_calls[0]
    assert reply.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments)["city"], str)


def test_ollama_package_chat_generate_and_list(front):
    client = ollama.Client(host=front.url)
    listed = client.list().models
    assert [m.model for m in listed] == ["team/tiny"]
    parts = list(client.chat("team/tiny", messages=HI, stream=True, options={"num_predict": 6}))
    assert parts[-1].done and parts[-1].eval_count == 6
    assert sum(1 for p in parts if p.message.content) >= 2
    answer = client.generate("team/tiny", "Once upon a time", options={"num_predict": 5})
    assert answer.done and answer.eval_count == 5 and answer.response


def test_anthropic_messages_through_the_front(front):
    client = anthropic.Anthropic(base_url=front.url, api_key="unused", max_retries=0)
    message = client.messages.create(model="team/tiny", max_tokens=6, messages=HI)
    assert message.stop_reason == "max_tokens" and message.content[0].text


def test_embeddings_pass_through(front):
    result = front.openai().embeddings.create(model="team/tiny", input=["one", "two"])
    assert len(result.data) == 2 and len(result.data[0].embedding) > 0


def test_key_from_the_named_environment_variable(front, backs):
    added = add_remote(front, "envteam", [backs[0].url], api_key_env="TEAM_KEY")
    assert added.status_code == 200 and added.json()["has_api_key"], added.text
    reply = front.openai().chat.completions.create(model="envteam/tiny", messages=HI, max_tokens=3)
    assert reply.usage.completion_tokens == 3
    assert remove_remote(front, "envteam").status_code == 200


def test_a_remote_without_its_key_is_a_clear_error(front, backs):
    assert add_remote(front, "nokey", [backs[0].url]).status_code == 200
    try:
        info = {r["name"]: r for r in httpx.get(front.url + "/api/remotes").json()["remotes"]}
        assert "401" in info["nokey"]["replicas"][0]["error"]
        r = httpx.post(
            front.url + "/v1/chat/completions",
            json={"model": "nokey/tiny", "messages": HI, "max_tokens": 2}, timeout=30,
        )  # fmt: skip
        assert r.status_code == 503
        message = r.json()["error"]["message"]
        assert "remote 'nokey' has no healthy replica" in message
        assert "refused its API key (401)" in message
    finally:
        remove_remote(front, "nokey")


def test_keys_are_never_written_in_the_remotes_file_nor_shown(front):
    path = front.config_dir / "remotes.json"
    assert KEY not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["remotes"][0]["has_stored_key"] is True
    key_file = front.config_dir / "remote-team.key"  # no keyring here: the user-only file
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    for path in ("/api/remotes", "/api/tags", "/v1/models", "/metrics"):
        assert KEY not in httpx.get(front.url + path, timeout=10).text
    assert KEY not in front.log()


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"name": "Team!", "urls": ["http://127.0.0.1:1"]}, 400, "lowercase letters"),
        ({"name": "x" * 33, "urls": ["http://127.0.0.1:1"]}, 400, "1 to 32"),
        ({"name": "ok", "urls": ["ftp://127.0.0.1:1"]}, 400, "http:// or https://"),
        ({"name": "ok", "urls": ["http://u:pw@127.0.0.1:1"]}, 400, "must not hold credentials"),
        ({"name": "ok", "urls": ["http://127.0.0.1:1/?a=1"]}, 400, "no query"),
        ({"name": "ok", "urls": []}, 400, "urls"),
        ({"name": "team", "urls": ["http://127.0.0.1:1"]}, 409, "already exists"),
    ],
)
def test_bad_remotes_are_refused_with_what_is_allowed(front, body, status, says):
    r = add_remote(front, **body)
    assert r.status_code == status, r.text
    assert says in r.json()["error"]


def test_a_remote_pointing_at_the_daemon_itself_is_refused(front):
    for url in (front.url, front.url.replace("127.0.0.1", "localhost") + "/v1"):
        r = add_remote(front, "loop", [url])
        assert r.status_code == 400 and "this daemon itself" in r.json()["error"]


def test_removing_an_unknown_remote_is_404(front):
    r = remove_remote(front, "nobody")
    assert r.status_code == 404 and "no remote named 'nobody'" in r.json()["error"]


@pytest.mark.parametrize(
    ("path", "body", "what"),
    [
        ("/api/pull", {"model": "team/tiny"}, "pull"),
        ("/api/delete", {"model": "team/tiny"}, "delete"),
        ("/api/copy", {"source": "team/tiny", "destination": "mine"}, "copy"),
        ("/api/create", {"model": "team/other", "from": "tiny"}, "create"),
    ],
)
def test_store_work_on_a_remote_model_is_a_clear_400(front, path, body, what):
    r = httpx.request("DELETE" if what == "delete" else "POST", front.url + path, json=body)
    assert r.status_code == 400, r.text
    assert f"served by remote 'team'; {what} works on local models only" in r.json()["error"]


def test_show_says_whose_model_it_is(front):
    shown = ollama.Client(host=front.url).show("team/tiny")
    assert shown.details.format == "remote"
    assert shown.modelinfo["general.remote"] == "team"
    assert shown.modelinfo["general.remote_id"] == "tiny"


def test_metrics_per_remote(front):
    front.openai().chat.completions.create(model="team/tiny", messages=HI, max_tokens=2)
    text = front.metrics()
    assert metric_value(text, "localllm_remote_requests_total", remote="team") >= 1
    assert metric_value(text, "localllm_remote_time_to_first_token_seconds_count", remote="team")
    assert metric_value(text, "localllm_remote_request_seconds_count", remote="team") >= 1
    assert metric_value(text, "localllm_remote_in_flight", remote="team") == 0
    for back_url in httpx.get(front.url + "/api/remotes").json()["remotes"][0]["urls"]:
        healthy = metric_value(text, "localllm_remote_replica_healthy", remote="team", url=back_url)
        assert healthy == 1.0


def test_an_ollama_speaking_remote_through_the_native_api(front, backs):
    added = add_remote(front, "native", [backs[1].url], kind="ollama", api_key=KEY)
    assert added.status_code == 200, added.text
    try:
        assert {"name": "native/tiny:latest", "remote_id": "tiny:latest"} in added.json()["models"]
        client = front.openai()
        chunks = list(
            client.chat.completions.create(
                model="native/tiny", messages=HI, max_tokens=5, stream=True
            )
        )
        assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) >= 2
        reply = client.chat.completions.create(model="native/tiny", messages=HI, max_tokens=5)
        assert reply.usage.completion_tokens == 5 and reply.choices[0].finish_reason == "length"
        vectors = client.embeddings.create(model="native/tiny", input=["a"]).data
        assert len(vectors[0].embedding) > 0
    finally:
        remove_remote(front, "native")
