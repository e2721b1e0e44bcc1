"""Safe by default, proven against the real daemon over real HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.daemon import ROOT, Daemon, free_port, make_store

KEY = "test-key-0123456789abcdef0123456789"
PRIVATE_NAME = "Ann Smith"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store
    from tests.support.model_writers.projector import write_tiny_projector

    root = tmp_path_factory.mktemp("security") / PRIVATE_NAME  # a user name with a space
    store = make_store(root / "store", {"tiny": tiny_model_path})
    misfit = write_tiny_projector(root / "misfit.gguf", text_embedding_length=96)  # not 64
    import_gguf(Store(store), "misfit", tiny_model_path, projector=misfit)
    _failed_pull_on_record(root / "logs" / "data" / "pulls.json", store)
    env = {"LOCALLLM_ORIGINS": "https://chat.example.com", "LOCALLLM_CONFIG": str(root / "cfg")}
    with Daemon(store, root / "logs", env=env) as running:
        yield running


def _failed_pull_on_record(pulls: Path, store: Path) -> None:
    """A pull that failed on a disk error in an earlier run: the pull list keeps its text."""
    error = f"[Errno 5] Input/output error: '{store}/blobs/sha256-1f.partial'"
    record = {"name": "hf.co/local/x:f16", "state": "failed", "status": "failed", "error": error}
    pulls.parent.mkdir(parents=True)
    pulls.write_text(json.dumps({"version": 1, "pulls": {"hf.co/local/x:f16": record}}))


@pytest.fixture(scope="module")
def keyed_daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("keyed")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs", env={"LOCALLLM_API_KEY": KEY}) as running:
        yield running


@pytest.mark.parametrize(
    "host",
    ["localhost", "127.0.0.1", "[::1]", "app.localhost", "LOCALHOST:11435", "127.0.0.2"],
)
def test_local_host_headers_are_served(daemon, host):
    response = httpx.get(daemon.url + "/v1/models", headers={"Host": host})
    assert response.status_code == 200


_HOSTNAME = socket.gethostname().lower()


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:11435",
        "localhost.evil.example",
        "192.168.1.5",
        "",
        _HOSTNAME,  # the LAN answers for the machine's own names: rebindable
        f"{_HOSTNAME}.local:11435",
    ],
)
def test_dns_rebinding_host_headers_are_refused(daemon, host):
    response = httpx.get(daemon.url + "/v1/models", headers={"Host": host})
    assert response.status_code == 403
    assert "forbidden host" in response.json()["error"]


def _browser(site: str, origin: str | None = None) -> dict[str, str]:
    """The headers a browser adds to a request: a ``<script src>`` sends no Origin."""
    headers = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}
    if origin is not None:
        headers |= {"Origin": origin, "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    return headers


@pytest.mark.parametrize("site", ["cross-site", "same-site", "Cross-Site"])
def test_another_sites_page_cannot_probe_without_cors(daemon, site):
    """A ``<script src=.../v1/models/NAME>`` would learn from the status which models exist."""
    for path in ("/v1/models/tiny", "/v1/models/nothere", "/api/tags", "/"):
        response = httpx.get(daemon.url + path, headers=_browser(site))
        assert response.status_code == 403, path
        assert "cross-site request refused" in response.json()["error"]
    post = httpx.post(daemon.url + "/api/delete", headers=_browser(site), json={"model": "x"})
    assert post.status_code == 403


@pytest.mark.parametrize(
    "headers",
    [
        {},  # the CLI, SDKs, curl
        _browser("none"),  # typed into the address bar
        _browser("same-origin"),
        _browser("cross-site", origin="https://chat.example.com"),  # CORS-approved
        _browser("same-site", origin="http://localhost:3000"),
    ],
)
def test_direct_same_origin_and_cors_approved_requests_are_served(daemon, headers):
    assert httpx.get(daemon.url + "/v1/models/tiny", headers=headers).status_code == 200
    assert httpx.get(daemon.url + "/v1/models/nothere", headers=headers).status_code == 404


def test_allowed_origins_get_cors_headers_for_themselves_only(daemon):
    for origin in ("http://localhost:3000", "https://chat.example.com"):
        response = httpx.get(daemon.url + "/v1/models", headers={"Origin": origin})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == origin
        preflight = httpx.options(
            daemon.url + "/v1/chat/completions",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == origin


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "http://localhost.evil.example"]
)
def test_other_origins_are_refused_and_never_reflected(daemon, origin):
    post = httpx.post(
        daemon.url + "/v1/chat/completions",
        headers={"Origin": origin, "Content-Type": "text/plain"},
        content=b'{"model": "tiny", "messages": []}',
    )
    assert post.status_code == 403
    assert "access-control-allow-origin" not in post.headers
    preflight = httpx.options(
        daemon.url + "/v1/models",
        headers={"Origin": origin, "Access-Control-Request-Method": "GET"},
    )
    assert preflight.status_code == 403
    assert preflight.headers.get("access-control-allow-origin") != "*"


def test_oversized_bodies_are_refused(daemon):
    declared = httpx.post(
        daemon.url + "/v1/chat/completions",
        content=b"x" * (33 << 20),
        headers={"Content-Type": "application/json"},
    )
    assert declared.status_code == 413

    def chunks():
        for _ in range(40):
            yield b"x" * (1 << 20)

    streamed = httpx.post(
        daemon.url + "/v1/chat/completions",
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    assert streamed.status_code == 413


def test_errors_never_contain_absolute_paths(daemon):
    chat = {"messages": [{"role": "user", "content": "x"}]}
    responses = [
        httpx.post(daemon.url + "/v1/chat/completions", json={"model": "../../etc/x", **chat}),
        httpx.post(daemon.url + "/v1/chat/completions", json={"model": "nothere", **chat}),
        httpx.post(daemon.url + "/v1/embeddings", json={"model": "/etc/passwd", "input": "x"}),
    ]
    for response in responses:
        assert 400 <= response.status_code < 500
        assert_private(response.text)


def test_a_failed_load_quotes_the_runner_log_without_paths(daemon):
    """llama.cpp's log lines name the blob files it read; clients get only the file names."""
    chat = {"model": "misfit", "messages": [{"role": "user", "content": "x"}]}
    response = httpx.post(daemon.url + "/api/chat", json={**chat, "stream": False})
    assert response.status_code == 500
    message = response.json()["error"]
    assert "failed to load model 'misfit'" in message and "vision projector" in message
    assert "sha256-" in message  # the log lines are there, cut to file names
    assert_private(message)


def assert_private(text: str) -> None:
    for private in (str(ROOT), "/tmp/", "/root", os.path.expanduser("~"), "models/blobs"):
        assert private not in text
    assert "Ann" not in text and "Smith" not in text


def test_the_pull_list_quotes_errors_without_paths(daemon):
    [failed] = httpx.get(daemon.url + "/api/pulls").json()["pulls"]
    assert failed["error"] == "[Errno 5] Input/output error: '<models>/blobs/sha256-1f.partial'"
    assert_private(failed["error"])


def test_the_log_is_served_without_paths(daemon):
    """Tracebacks name every file; a key holder anywhere reads the log without them."""
    store = daemon.log_path.parent.parent / "store"
    with daemon.log_path.open("a") as log:  # the daemon's own output file, as on a bad day
        log.write(
            "Traceback (most recent call last):\n"
            f'  File "{ROOT}/daemon/server/app.py", line 1, in create_app\n'
            f"OSError: [Errno 5] cannot read '{store}/blobs/sha256-1f'\n"
        )
    text = httpx.get(daemon.url + "/api/logs", params={"lines": 50}).json()["text"]
    assert "'<models>/blobs/sha256-1f'" in text and 'File "app.py", line 1' in text
    assert_private(text)


def test_an_api_key_is_required_when_configured(keyed_daemon):
    """On loopback too (the test daemon listens on 127.0.0.1), for every method."""
    url = keyed_daemon.url + "/v1/models"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    for path in ("/api/tags", "/api/logs", "/api/system", "/metrics"):
        assert httpx.get(keyed_daemon.url + path).status_code == 401, path
    assert httpx.request("OPTIONS", url).status_code == 401  # not a preflight: no way round
    assert httpx.get(keyed_daemon.url + "/").status_code == 200  # "is it running?" stays open
    preflight = httpx.options(  # a browser's preflight carries no key: CORS answers it
        url, headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "GET"}
    )
    assert preflight.status_code == 204
    from openai import OpenAI

    client = OpenAI(base_url=keyed_daemon.url + "/v1", api_key=KEY, max_retries=0)
    assert [m.id for m in client.models.list()] == ["tiny"]  # (the keyed store has one model)


def _serve(host: str, env: dict[str, str]) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LOCALLLM_")}
    return subprocess.Popen(
        [sys.executable, "-m", "localllm.daemon", "serve", "--host", host],
        cwd=ROOT,
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_serving_beyond_loopback_without_a_key_is_refused(tmp_path):
    process = _serve(
        f"0.0.0.0:{free_port()}",
        {"LOCALLLM_MODELS": str(tmp_path / "m"), "LOCALLLM_CONFIG": str(tmp_path / "cfg")},
    )
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "without an API key" in output and "localllm key" in output


def test_serving_beyond_loopback_uses_the_saved_key(tmp_path):
    from localllm.daemon.security.keys import ApiKeyStore

    key = ApiKeyStore(tmp_path / "cfg", use_keyring=False).create()
    port = free_port()
    process = _serve(
        f"0.0.0.0:{port}",
        {
            "LOCALLLM_MODELS": str(tmp_path / "m"),
            "LOCALLLM_CONFIG": str(tmp_path / "cfg"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        },
    )
    try:
        from tests.support.polling import wait_for

        def answers() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        assert wait_for(answers, timeout=30)
        url = f"http://127.0.0.1:{port}/v1/models"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {key}"}).status_code == 200
        # Beyond loopback the Host check is off (any name may reach us, the machine's own
        # included), the key guards instead.
        for host in ("my-desktop.lan", _HOSTNAME, f"{_HOSTNAME}.local"):
            headers = {"Host": host, "Authorization": f"Bearer {key}"}
            assert httpx.get(url, headers=headers).status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=15)
