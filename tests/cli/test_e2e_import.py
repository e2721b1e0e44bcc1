"""``localllm import`` against a real daemon, run as the real command: a file linked in (same
inode), one from another file system copied with its size said first, ``--scan`` listing a
fake Hugging Face cache and adding it with ``--yes``, and a non-GGUF refused in one line."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from localllm.model_registry.store import LayerType, Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.cli_e2e import cli_env, run_cli
from tests.support.daemon import Daemon
from tests.support.other_apps import hf_cache_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-import")


@pytest.fixture(scope="module")
def daemon(root):
    hf_cache_model(root / "hf", "org/Found-GGUF", "Found-Q8_0.gguf", seed=3)
    env = {"HF_HUB_CACHE": str(root / "hf"), "HOME": str(root / "home")}
    with Daemon(root / "store", root / "logs", env=env) as running:
        yield running


@pytest.fixture
def env(daemon, tmp_path):
    return cli_env(tmp_path, daemon.port)


def _model_inode(root: Path, name: str) -> int:
    store = Store(root / "store")
    [layer] = [x for x in store.read_manifest(name).layers if x.media_type is LayerType.MODEL]
    return os.stat(store.layout.blob_path(layer.digest)).st_ino


def test_a_file_is_linked_not_copied(root, env):
    source = write_tiny_model(root / "Mine-Q8_0.gguf", seed=5)
    done = run_cli(["import", str(source)], env)
    assert done.returncode == 0, done.stderr
    assert "linked Mine-Q8_0.gguf" in done.stderr and "no copy" in done.stderr
    assert "added mine:q8_0" in done.stdout
    assert _model_inode(root, "mine:q8_0") == os.stat(source).st_ino


def test_another_file_system_is_copied_and_the_size_told(root, env):
    if os.stat("/dev/shm").st_dev == os.stat(root).st_dev:
        pytest.skip("/dev/shm is on the same file system here")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        source = write_tiny_model(Path(other) / "Far.gguf", seed=6)
        done = run_cli(["import", str(source), "--name", "far"], env)
        assert done.returncode == 0, done.stderr
        assert "will be copied into the store" in done.stderr
        assert "copied Far.gguf" in done.stderr and "added far" in done.stdout
        assert _model_inode(root, "far") != os.stat(source).st_ino


def test_scan_lists_then_adds_with_yes(root, env):
    listed = run_cli(["import", "--scan"], env)
    assert listed.returncode == 0, listed.stderr
    assert "found:q8_0" in listed.stdout and "huggingface" in listed.stdout
    assert "link (no copy)" in listed.stdout and "nothing was added" in listed.stderr
    added = run_cli(["import", "--scan", "--yes"], env)
    assert added.returncode == 0, added.stderr
    assert "added found:q8_0" in added.stdout
    again = run_cli(["import", "--scan"], env)
    assert "already added" in again.stdout and "already in the store" in again.stdout


def test_a_file_that_is_not_gguf_is_one_line(root, env):
    fake = root / "notes.gguf"
    fake.write_text("just some notes")
    done = run_cli(["import", str(fake)], env)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and str(root) not in done.stderr
    assert "GGUF" in done.stderr and len(done.stderr.strip().splitlines()) == 1
