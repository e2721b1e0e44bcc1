"""The daemon's children parse untrusted GGUF files in native code: they start with a minimal
environment, so the daemon's secrets (API key, Hugging Face token, other credentials) never
reach them. Proven on the real daemon: a runner's /proc/<pid>/environ, and what the
quantizer's interpreter saw at start-up (a ``sitecustomize`` hook records it)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import httpx
import pytest

from localllm.daemon.settings import runner_environment
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store

KEY = "test-key-runner-env-0123456789abcdef"
SECRETS = {
    "LOCALLLM_API_KEY": KEY,
    "HF_TOKEN": "hf_secret_token_for_the_runner_env_test",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-for-the-runner-env-test",
}
KEPT = {"GGML_RUNNER_ENV_TEST": "kept", "OMP_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"}
AUTH = {"Authorization": f"Bearer {KEY}"}
HOOK = """
import json, os, sys
with open(os.path.join({folder!r}, "environ-%d.json" % os.getpid()), "w") as out:
    json.dump({{"argv": sys.orig_argv, "environ": dict(os.environ)}}, out)
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("runner-env")


@pytest.fixture(scope="module")
def daemon(root, tiny_model_path):
    hooks, seen = root / "hooks", root / "seen"
    hooks.mkdir()
    seen.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK.format(folder=str(seen)))
    store = make_store(root / "store", {"tiny": tiny_model_path})
    env = {**SECRETS, **KEPT, "PYTHONPATH": str(hooks)}
    with Daemon(store, root / "logs", env=env) as running:
        yield running


def read_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if "=" in entry)


def assert_no_secrets(environ: dict[str, str]) -> None:
    """Failures name the leaked variables only (never print a whole environment)."""
    leaked = sorted(set(SECRETS) & set(environ))
    assert not leaked, leaked
    carried = sorted(n for n, v in environ.items() if any(s in v for s in SECRETS.values()))
    assert not carried, carried


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_a_runner_has_none_of_the_daemons_secrets_and_works(daemon):
    assert set(SECRETS) <= set(read_environ(daemon.process.pid))  # the daemon has them
    body = {"model": "tiny", "prompt": "Hi", "options": {"num_predict": 3}, "stream": False}
    answer = httpx.post(daemon.url + "/api/generate", json=body, headers=AUTH, timeout=120)
    assert answer.status_code == 200 and answer.json()["done"] is True
    [pid] = daemon.runner_pids()
    environ = read_environ(pid)
    assert_no_secrets(environ)
    assert KEPT.items() <= environ.items()  # what llama.cpp and the locale need is kept
    assert environ["PATH"] == os.environ["PATH"]


def test_the_quantizer_has_none_of_the_daemons_secrets(daemon, root):
    data = write_tiny_model(root / "f16.gguf", seed=21).read_bytes()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    uploaded = httpx.post(f"{daemon.url}/api/blobs/{digest}", content=data, headers=AUTH)
    assert uploaded.status_code == 201
    request = {
        "model": "tiny-q8",
        "modelfile": "FROM ./m.gguf\n",
        "files": {"./m.gguf": digest},
        "quantize": "q8_0",
        "stream": False,
    }
    created = httpx.post(daemon.url + "/api/create", json=request, headers=AUTH, timeout=120)
    assert created.json() == {"status": "success"}
    seen = [json.loads(p.read_text()) for p in (root / "seen").glob("environ-*.json")]
    [quantizer] = [s for s in seen if "localllm.daemon.runners.worker.quantize" in s["argv"]]
    assert_no_secrets(quantizer["environ"])
    assert KEPT.items() <= quantizer["environ"].items()


def test_only_what_children_need_passes():
    env = {
        **SECRETS,
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp/x",
        "LD_LIBRARY_PATH": "/opt/cuda/lib64",
        "CUDA_VISIBLE_DEVICES": "0",
        "GGML_CUDA_NO_PINNED": "1",
        "LLAMA_CPP_LIB_PATH": "/opt/llama",
        "OPENBLAS_NUM_THREADS": "2",
        "PYTHONPATH": "/src",
        "SystemRoot": "C:\\Windows",  # Windows names come in any case
        "GITHUB_TOKEN": "ghp_x",
        "SSH_AUTH_SOCK": "/tmp/ssh",
        "OPENAI_API_KEY": "sk-x",
    }
    kept = dict(runner_environment(env))
    assert set(kept) == {
        "PATH", "HOME", "LANG", "TMPDIR", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
        "GGML_CUDA_NO_PINNED", "LLAMA_CPP_LIB_PATH", "OPENBLAS_NUM_THREADS", "PYTHONPATH",
        "SystemRoot",
    }  # fmt: skip
