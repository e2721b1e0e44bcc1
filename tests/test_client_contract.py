"""``DaemonClient`` is ``Client``'s interface: the client has exactly its methods, the test
stand-in matches them (a stand-in that drifts is caught), and an answer that does not fit
its ``daemon.api`` model is a ``ServerError`` that names the field, not a pydantic traceback."""

from __future__ import annotations

import json

import httpx
import pytest

from localllm.daemon.api import ModelSummary, ShowResponse
from localllm.daemon.api.remotes import RemoteAddRequest
from localllm.daemon.client import (
    BadRequest,
    Client,
    Conflict,
    DaemonClient,
    RemoteNotFound,
    ServerError,
)
from tests.support.cli import FakeClient, signature_drift
from tests.support.fake_remotes import remote_info

SHOW_TYPE = "localllm.daemon.api.native_models.ShowResponse"


def test_the_client_has_exactly_the_protocols_methods():
    assert signature_drift(Client) == []
    assert isinstance(Client(), DaemonClient)


def test_the_stand_in_matches_the_client():
    assert signature_drift(FakeClient) == []
    assert isinstance(FakeClient(), DaemonClient)


def test_a_stand_in_that_drifts_is_caught():
    class Drifted(FakeClient):
        def show(self, name: str) -> ShowResponse:  # lost ``verbose``
            return super().show(name)

        def list_models(self) -> list[dict]:  # plain dicts, not the wire model
            return []

        def reset(self) -> None:  # not a client method
            pass

    drift = signature_drift(Drifted)
    assert len(drift) == 3
    assert drift[0] == "Drifted.reset is not a client method"
    assert drift[1] == (
        "Drifted.list_models(self) -> list[dict] != "
        "list_models(self) -> list[localllm.daemon.api.native_models.ModelSummary]"
    )
    assert drift[2].startswith("Drifted.show(self, name: str) -> ")
    assert drift[2].endswith("!= show(self, name: str, verbose: bool = False) -> " + SHOW_TYPE)

    class Partial:
        def list_models(self) -> list[ModelSummary]:
            return []

    assert "Partial lacks show" in signature_drift(Partial)
    assert not any("list_models" in line for line in signature_drift(Partial))


def test_an_answer_that_does_not_fit_its_model_is_a_server_error():
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            return httpx.Response(200, json={"models": [{"name": "x", "size": "big"}]})
        return httpx.Response(200, content=b'{"status":"pulling manifest"}\n{"completed":3}\n')

    client = Client("http://daemon", transport=httpx.MockTransport(handler))
    with pytest.raises(ServerError, match=r"answer to /api/tags .*\(models\.0\.model: ") as bad:
        client.list_models()
    assert bad.value.code == "unexpected_answer"
    events = client.pull("tiny")
    assert next(events).status == "pulling manifest"
    with pytest.raises(ServerError, match=r"answer to /api/pull .*\(status: Field required\)"):
        next(events)


def test_remote_calls_send_the_contract_and_type_the_errors():
    """The remotes calls speak ``daemon.api.remotes``: the request as the daemon reads it (no
    null fields), the answer parsed, and 400/404/409 as their own errors."""
    seen: list[httpx.Request] = []
    info = remote_info("gpu", ["http://a:1"], ["m"]).model_dump(mode="json")

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "GET":
            return httpx.Response(200, json={"remotes": [info]})
        if request.method == "DELETE":
            return httpx.Response(404, json={"error": "no remote named 'x y'"})
        body = json.loads(request.content)
        if body["name"] == "taken":
            return httpx.Response(409, json={"error": "a remote named 'taken' exists"})
        if body["name"] == "Bad!":
            return httpx.Response(400, json={"error": "names are lowercase letters..."})
        return httpx.Response(200, json=info)

    client = Client("http://daemon", transport=httpx.MockTransport(handler))
    assert client.remotes().remotes[0].models[0].name == "gpu/m"
    added = client.add_remote(RemoteAddRequest(name="gpu", urls=["http://a:1"], api_key="k"))
    assert added.name == "gpu"
    assert json.loads(seen[-1].content) == {
        "name": "gpu",
        "urls": ["http://a:1"],
        "kind": "openai",
        "api_key": "k",
        "aliases": {},
        "timeout_seconds": 600.0,
        "max_concurrency": 16,
    }
    with pytest.raises(Conflict, match="exists"):
        client.add_remote(RemoteAddRequest(name="taken", urls=["http://a:1"]))
    with pytest.raises(BadRequest, match="lowercase") as bad:
        client.add_remote(RemoteAddRequest(name="Bad!", urls=["http://a:1"]))
    assert type(bad.value) is BadRequest
    with pytest.raises(RemoteNotFound, match="no remote"):
        client.remove_remote("x y")
    assert seen[-1].url.raw_path == b"/api/remotes/x%20y"
