"""``DaemonClient`` is ``Client``'s interface: the client has exactly its methods, the test
stand-in matches them (a stand-in that drifts is caught), and an answer that does not fit
its ``daemon.api`` model is a ``ServerError`` that names the field, not a pydantic traceback."""

from __future__ import annotations

import httpx
import pytest

from daemon.api import ModelSummary, ShowResponse
from daemon.client import Client, DaemonClient, ServerError
from tests.support.cli import FakeClient, signature_drift

SHOW_TYPE = "daemon.api.native_models.ShowResponse"


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
        "list_models(self) -> list[daemon.api.native_models.ModelSummary]"
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
