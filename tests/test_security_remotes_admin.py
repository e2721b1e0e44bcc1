"""Remotes are an admin operation, and keys stay home.

A remote makes the daemon send requests, with a key from its environment, to any URL and read
the answers back, and its names come before local models'. So adding or removing one needs a
caller on this machine *and* the admin token (the CLI and the app read it from the config
folder; a program holding only the API key does not have it); ``api_key_env`` may name only
a variable that looks like an engine's key (never ``HF_TOKEN``, ``LOCALLLM_*`` or a cloud
account's); and a remote's name or alias may not take a local model's requests.
"""

from __future__ import annotations

import json
import stat

import httpx
import pytest

from localllm.daemon.api.remotes import RemoteAddRequest
from localllm.daemon.client import Client, Forbidden
from localllm.daemon.client.launcher import admin_token_reader
from localllm.daemon.security.keys import AdminTokenStore
from localllm.daemon.server import create_app
from localllm.daemon.settings import Settings
from tests.support.daemon import Daemon, make_store
from tests.support.in_process import app_client, app_settings, serve_in_thread
from tests.support.polling import wait_for
from tests.support.raw_remote import RawRemote
from tests.support.remotes import admin_headers

TOKEN = "admin-token-for-tests-0123456789"
API_KEY = "lan-api-key-0123456789abcdef"
SECRET = "hf_the-users-hugging-face-token"
LOCAL = "127.0.0.1"


ENVIRONMENT = {"HF_TOKEN": SECRET, "TEAM_KEY": "team-key", "AWS_SECRET_ACCESS_KEY": "aws"}


def settings_for(root, models: dict | None = None, **fields) -> Settings:
    return app_settings(root, models, remote_check_interval=1, environment=ENVIRONMENT, **fields)


@pytest.fixture
def listener():
    remote = RawRemote("ok")
    yield remote
    remote.close()


def client_for(app, address: str = LOCAL):
    return app_client(app, address)


@pytest.fixture
def app(tmp_path, tiny_model_path):
    models = {"team/local": tiny_model_path, "qwen": tiny_model_path}
    return create_app(settings_for(tmp_path, models), admin_token=TOKEN)


def remote(name: str, url: str, **fields) -> dict:
    return {"name": name, "urls": [url], **fields}


def test_adding_a_remote_without_the_admin_token_is_refused(app, listener):
    with client_for(app) as local:
        answer = local.post("/api/remotes", json=remote("evil", listener.url))
        assert answer.status_code == 403, answer.text
        assert "admin token" in answer.json()["error"]
        wrong = local.post("/api/remotes", json=remote("evil", listener.url),
                           headers=admin_headers("guess"))  # fmt: skip
        assert wrong.status_code == 403
        assert local.get("/api/remotes").json()["remotes"] == []
    assert listener.heads == []  # the daemon never reached out


def test_the_api_key_alone_does_not_grant_it(tmp_path, listener):
    app = create_app(settings_for(tmp_path, api_key=API_KEY), admin_token=TOKEN)
    bearer = {"Authorization": f"Bearer {API_KEY}"}
    with client_for(app) as local:
        refused = local.post("/api/remotes", json=remote("lan", listener.url), headers=bearer)
        assert refused.status_code == 403, refused.text
        both = {**bearer, **admin_headers(TOKEN)}
        assert local.post("/api/remotes", json=remote("lan", listener.url), headers=both).is_success


@pytest.mark.parametrize("address", ["192.168.1.20", "10.0.0.7", "testclient"])
def test_the_admin_token_from_another_machine_is_refused(app, listener, address):
    with client_for(app, address) as far:
        answer = far.post("/api/remotes", json=remote("far", listener.url),
                          headers=admin_headers(TOKEN))  # fmt: skip
        assert answer.status_code == 403 and "own machine" in answer.json()["error"]


def test_with_the_token_on_loopback_a_remote_is_added_and_removed(app, listener):
    with client_for(app) as local:
        added = local.post("/api/remotes", json=remote("gpu", listener.url),
                           headers=admin_headers(TOKEN))  # fmt: skip
        assert added.status_code == 200, added.text
        assert local.delete("/api/remotes/gpu").status_code == 403
        assert local.delete("/api/remotes/gpu", headers=admin_headers(TOKEN)).status_code == 200


@pytest.mark.parametrize(
    "variable",
    ["HF_TOKEN", "LOCALLLM_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PATH", "HOME",
     "team_key", "HUGGING_FACE_HUB_TOKEN"],
)  # fmt: skip
def test_a_variable_that_is_no_engine_key_is_refused(app, listener, variable):
    with client_for(app) as local:
        answer = local.post("/api/remotes", json=remote("x", listener.url, api_key_env=variable),
                            headers=admin_headers(TOKEN))  # fmt: skip
        assert answer.status_code == 400, answer.text
        assert "api_key_env" in answer.json()["error"]
    assert not any(SECRET.encode() in head for head in listener.heads)


def test_an_engine_key_variable_is_sent_to_its_remote(app, listener):
    with client_for(app) as local:
        answer = local.post("/api/remotes", json=remote("t", listener.url, api_key_env="TEAM_KEY"),
                            headers=admin_headers(TOKEN))  # fmt: skip
        assert answer.status_code == 200 and answer.json()["has_api_key"], answer.text
    assert any(b"authorization: bearer team-key" in head.lower() for head in listener.heads)


def test_a_forbidden_variable_in_an_old_remotes_file_is_never_sent(tmp_path, listener):
    """A remotes file written before this rule (``HF_TOKEN`` named): the token stays home."""
    entry = {
        "name": "old",
        "urls": [listener.url],
        "kind": "openai",
        "api_key_env": "HF_TOKEN",
        "has_stored_key": False,
        "aliases": {},
        "timeout_seconds": 60,
        "max_concurrency": 4,
    }
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "remotes.json").write_text(json.dumps({"remotes": [entry]}))
    with client_for(create_app(settings_for(tmp_path), admin_token=TOKEN)) as local:
        assert wait_for(lambda: len(listener.heads) >= 1, timeout=30)  # its first check
        [info] = local.get("/api/remotes").json()["remotes"]
        assert not info["has_api_key"]
    assert not any(SECRET.encode() in head for head in listener.heads)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"name": "team"}, "would hide the local model 'team/local'"),
        ({"name": "library"}, "would hide the local model 'qwen'"),
        ({"name": "localllm"}, "would hide the local model"),
        ({"name": "ok", "aliases": {"qwen": "m"}}, "alias 'qwen' is the name of a local model"),
        ({"name": "ok", "aliases": {"qwen:latest": "m"}}, "is the name of a local model"),
        ({"name": "ok", "aliases": {"team/local": "m"}}, "is the name of a local model"),
    ],
)
def test_names_that_would_take_a_local_model_are_refused(app, listener, fields, says):
    with client_for(app) as local:
        body = {"urls": [listener.url], **fields}
        answer = local.post("/api/remotes", json=body, headers=admin_headers(TOKEN))
        assert answer.status_code == 409, answer.text
        assert says in answer.json()["error"]
        assert local.get("/api/remotes").json()["remotes"] == []


def test_other_names_and_aliases_are_fine(app, listener):
    with client_for(app) as local:
        body = remote("gpu", listener.url, aliases={"big": "m", "qwen:7b": "m"})
        assert local.post("/api/remotes", json=body, headers=admin_headers(TOKEN)).is_success


def test_the_client_sends_the_token_it_reads_only_for_changes(tmp_path, listener):
    settings = settings_for(tmp_path)
    seen: list[str | None] = []

    def token() -> str:
        seen.append("read")
        return TOKEN

    with serve_in_thread(lambda port: create_app(settings, admin_token=TOKEN)) as url:
        with Client(url, admin_token=token) as client:
            assert client.remotes().remotes == [] and seen == []  # a listing needs no token
            client.add_remote(RemoteAddRequest(name="gpu", urls=[listener.url]))
            client.remove_remote("gpu")
            assert seen == ["read", "read"]
        with Client(url) as client, pytest.raises(Forbidden, match="admin token"):
            client.add_remote(RemoteAddRequest(name="gpu", urls=[listener.url]))


def test_front_ends_read_the_token_for_a_daemon_on_this_machine_only(tmp_path):
    store = AdminTokenStore(tmp_path)
    token = store.create()
    assert stat.S_IMODE((tmp_path / "admin_token").stat().st_mode) == 0o600
    assert store.create() == token  # made once
    assert admin_token_reader(Settings(host="127.0.0.1", config_dir=tmp_path))() == token
    assert admin_token_reader(Settings(host="0.0.0.0", config_dir=tmp_path))() == token
    assert admin_token_reader(Settings(host="gpu-box.lan", config_dir=tmp_path))() is None
    configured = Settings(host="gpu-box.lan", config_dir=tmp_path, admin_token="set")
    assert admin_token_reader(configured)() == "set"


def test_the_daemon_makes_its_admin_token_private_at_start(tmp_path, listener):
    with Daemon(make_store(tmp_path / "store", {}), tmp_path / "logs") as daemon:
        path = daemon.config_dir / "admin_token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        body = remote("gpu", listener.url)
        refused = httpx.post(daemon.url + "/api/remotes", json=body, timeout=30)
        assert refused.status_code == 403
        headers = admin_headers(path.read_text().strip())
        added = httpx.post(daemon.url + "/api/remotes", json=body, headers=headers, timeout=30)
        assert added.status_code == 200, added.text
