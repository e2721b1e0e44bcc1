"""What the daemon writes about its user stays theirs: logs, runner logs and the pull list
are 0600 in 0700 folders, whatever the umask (chats: tests/gui/test_gui_chat_store.py; the
daemon log the front ends start it with: tests/cli/test_launcher.py)."""

from __future__ import annotations

import sys

import httpx
import pytest

from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store
from tests.support.local_hub import LocalHub
from tests.support.modes import mode_of, umask

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions"),
]


def test_runner_logs_and_the_pull_list_are_private_whatever_the_umask(tmp_path, tiny_model_path):
    store = make_store(tmp_path / "store", {"tiny": tiny_model_path})
    logs, data = tmp_path / "daemon-logs", tmp_path / "data"  # new: the daemon makes them
    model = write_tiny_model(tmp_path / "m.gguf", n_embd=64, seed=31).read_bytes()
    with LocalHub() as hub:
        hub.add_repo("local/Private-GGUF", {"Private-F16.gguf": model})
        env = {"LOCALLLM_LOGS": str(logs), "LOCALLLM_DATA": str(data), "HF_ENDPOINT": hub.endpoint}
        with umask(0), Daemon(store, tmp_path / "logs", env=env) as daemon:
            body = {"model": "tiny", "prompt": "Hi", "options": {"num_predict": 2}}
            answer = httpx.post(daemon.url + "/api/generate", json=body | {"stream": False})
            assert answer.status_code == 200
            pulled = httpx.post(
                daemon.url + "/api/pull",
                json={"model": "hf.co/local/Private-GGUF", "stream": False},
                timeout=60,
            )
            assert pulled.json() == {"status": "success"}
    [runner_log] = logs.glob("runner-*.log")
    assert "starting runner for tiny" in runner_log.read_text()
    assert (mode_of(logs), mode_of(runner_log)) == (0o700, 0o600)
    assert (mode_of(data), mode_of(data / "pulls.json")) == (0o700, 0o600)
