"""``localllm pull`` (and ``run``'s pull of a missing model) against a real daemon pulling
from a local stand-in for Hugging Face, with a catalog file naming the test repository."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from tests.support.cli_e2e import CLI, cli_env, run_cli
from tests.support.daemon import ROOT, Daemon
from tests.support.interrupt import default_sigint
from tests.support.local_hub import LocalHub
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

REPO = "local/Tiny-GGUF"
FILE = "Tiny-Q8_0.gguf"


def catalog_entry(name: str) -> dict:
    return {
        "name": name,
        "aliases": [],
        "repo": REPO,
        "quant": "Q8_0",
        "kind": "chat",
        "parameter_size": "1M",
        "size": 2_000_000,
        "description": "a tiny test model",
    }


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory) -> bytes:
    from localllm.model_registry.tiny_gguf import write_tiny_model

    folder = tmp_path_factory.mktemp("hub-files")
    model = write_tiny_model(folder / "q8.gguf", n_embd=128, n_layer=4, file_type="Q8_0", seed=3)
    return model.read_bytes()


@pytest.fixture(scope="module")
def hub(model_bytes):
    with LocalHub() as hub:
        hub.add_repo(REPO, {"README.md": b"# tiny", FILE: model_bytes})
        yield hub


@pytest.fixture
def daemon(hub, tmp_path):
    catalog = tmp_path / "catalog.json"
    entries = [catalog_entry(name) for name in ("tiny-hub:1m", "tiny-run:1m", "tiny-pause:1m")]
    catalog.write_text(json.dumps({"version": 1, "models": entries}))
    env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_CATALOG": str(catalog)}
    with Daemon(tmp_path / "store", tmp_path / "logs", env=env) as running:
        yield running


@pytest.fixture
def env(daemon, tmp_path):
    return cli_env(tmp_path, daemon.port)


def test_pull_shows_progress_and_the_model_arrives(env, hub):
    result = run_cli(["pull", "tiny-hub:1m"], env)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "pulling manifest"
    digest = hub.sha256(REPO, FILE)
    assert any(line.startswith(f"pulling {digest[:12]}...  100% ▕") for line in lines)
    assert lines[-1] == "success"
    listed = run_cli(["list"], env).stdout
    assert "tiny-hub:1m" in listed


def test_pull_json(env):
    result = run_cli(["pull", "tiny-hub:1m", "--json"], env)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0 and events[-1] == {"status": "success"}


def test_ctrl_c_pauses_and_the_same_command_resumes(env, hub, model_bytes):
    size = len(model_bytes)
    hub.reset_counters()
    hub.set_throttle(REPO, FILE, size / 20)  # about 20 s for the whole file
    pull = subprocess.Popen(
        [*CLI, "pull", "tiny-pause:1m"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert wait_for(lambda: hub.bytes_served(REPO, FILE) > size // 10, timeout=60)
        pull.send_signal(signal.SIGINT)
        _, err = pull.communicate(timeout=30)
    finally:
        if pull.poll() is None:
            pull.kill()
    assert pull.returncode == 130
    assert err.rstrip().endswith("paused; run the same command again to resume")
    assert "Traceback" not in err

    def paused() -> bool:
        listed = json.loads(run_cli(["pulls", "--json"], env).stdout)
        return all(p.get("status") != "running" for p in listed)

    assert wait_for(paused, timeout=60, interval=0.2), "the pull still runs after Ctrl+C"
    served_before = hub.bytes_served(REPO, FILE)
    hub.set_throttle(REPO, FILE, None)
    result = run_cli(["pull", "tiny-pause:1m"], env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.rstrip().endswith("success")
    assert hub.bytes_served(REPO, FILE) - served_before < size  # resumed, not restarted


def test_run_pulls_a_missing_model_first(env):
    result = run_cli(["run", "tiny-run:1m", "Hello", "-o", "num_predict", "4"], env)
    assert result.returncode == 0, result.stderr
    assert "pulling manifest" in result.stderr and "success" in result.stderr
    assert result.stdout.strip()


def test_an_unknown_name_is_one_line(env):
    result = run_cli(["run", "tiny-hubb", "Hello"], env)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "tiny-hub" in result.stderr  # the did-you-mean suggestion
    result = run_cli(["pull", "no-such-model-anywhere"], env)
    assert result.returncode == 1 and result.stderr.startswith("Error: ")
    assert result.stderr.count("\n") == 1
