"""``GET /api/server`` and ``POST /api/shutdown``: how the daemon is served, and a graceful
stop that only a local program may ask for (never a web page, never another machine, and
with the API key when one is set). In-process with a recorded stop, then for real."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient

from localllm.daemon.server import create_app
from localllm.daemon.settings import Settings
from tests.support.daemon import Daemon
from tests.support.polling import wait_for

KEY = "test-key-0123456789abcdef0123456789"


def make_app(tmp_path, **settings):
    app = create_app(Settings(models_dir=tmp_path / "models", data_dir=tmp_path, **settings))
    stops: list[int] = []
    app.state.stop_server = lambda: stops.append(1)
    return app, stops


def local(app, address="127.0.0.1", **kwargs) -> TestClient:
    return TestClient(app, base_url="http://localhost", client=(address, 50000), **kwargs)


def test_a_local_program_stops_the_daemon(tmp_path):
    app, stops = make_app(tmp_path)
    with local(app) as client:
        answer = client.post("/api/shutdown")
        assert answer.status_code == 200 and answer.json() == {"status": "stopping"}
        assert wait_for(lambda: stops == [1])  # scheduled just after the answer


@pytest.mark.parametrize("address", ["192.168.1.20", "10.0.0.7", "testclient"])
def test_other_machines_may_not(tmp_path, address):
    app, stops = make_app(tmp_path, host="0.0.0.0", api_key=KEY)
    with local(app, address, headers={"Authorization": f"Bearer {KEY}"}) as client:
        answer = client.post("/api/shutdown")
    assert answer.status_code == 403 and "own machine" in answer.json()["error"]
    assert stops == []


def test_nor_a_web_page_even_from_an_allowed_origin(tmp_path):
    app, stops = make_app(tmp_path)
    with local(app, "::ffff:127.0.0.1") as client:
        answer = client.post("/api/shutdown", headers={"Origin": "http://localhost:3000"})
    assert answer.status_code == 403 and "web page" in answer.json()["error"]
    assert stops == []


def test_the_key_is_needed_when_one_is_set(tmp_path):
    app, stops = make_app(tmp_path, api_key=KEY)
    with local(app) as client:
        assert client.post("/api/shutdown").status_code == 401
        assert client.get("/api/server").status_code == 401
        keyed = {"Authorization": f"Bearer {KEY}"}
        assert client.post("/api/shutdown", headers=keyed).status_code == 200
        assert wait_for(lambda: stops == [1])


def test_how_the_daemon_is_served(tmp_path):
    app, _ = make_app(tmp_path, host="0.0.0.0", port=7000, api_key=KEY)
    with local(app, headers={"Authorization": f"Bearer {KEY}"}) as client:
        served = client.get("/api/server").json()
    assert served == {"host": "0.0.0.0", "port": 7000, "lan": True, "api_key_set": True}


@pytest.mark.slow
def test_a_real_daemon_stops_gracefully(tmp_path):
    with Daemon(tmp_path / "store", tmp_path / "logs") as daemon:
        assert httpx.get(daemon.url + "/api/server").json()["lan"] is False
        page = {"Origin": "http://localhost:3000"}
        assert httpx.post(daemon.url + "/api/shutdown", headers=page).status_code == 403
        assert httpx.post(daemon.url + "/api/shutdown").json() == {"status": "stopping"}
        daemon.process.wait(20)
        assert "Application shutdown complete" in daemon.log() or daemon.process.returncode
