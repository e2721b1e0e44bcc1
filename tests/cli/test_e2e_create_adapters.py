"""``localllm create`` with LoRA adapters, as a subprocess against a real daemon: a file outside
the Modelfile's folder is sent only after a yes at the terminal (or ``--yes``), never from a
script that did not pass ``--yes``; an ADAPTER that is not a LoRA adapter for the base model is
refused before a byte is uploaded; ``show`` lists the adapters with their scale."""

from __future__ import annotations

import hashlib
import sys

import pexpect
import pytest

from localllm.daemon.client import Client
from tests.support.adapters import NOT_ADAPTERS, not_an_adapter
from tests.support.cli_e2e import CLI, cli_env, run_cli
from tests.support.daemon import ROOT, Daemon, make_store
from tests.support.model_writers.lora import write_tiny_lora

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("cli-adapters")
    with Daemon(make_store(root / "store", {"tiny": tiny_model_path}), root / "logs") as running:
        yield running


@pytest.fixture
def client(daemon):
    with Client(daemon.url) as client:
        yield client


@pytest.fixture
def env(daemon, tmp_path):
    return cli_env(tmp_path, daemon.port)


@pytest.fixture
def project(request, tmp_path, tiny_model_path):
    """A Modelfile folder whose ADAPTER lies outside it, in a sibling folder (an adapter of
    its own per test, so none is on the daemon already)."""
    (tmp_path / "project").mkdir()
    (tmp_path / "elsewhere").mkdir()
    seed = int(hashlib.sha256(request.node.name.encode()).hexdigest()[:8], 16)
    lora = write_tiny_lora(tmp_path / "elsewhere" / "lora.gguf", tiny_model_path, seed=seed)
    modelfile = tmp_path / "project" / "Modelfile"
    modelfile.write_text("FROM tiny\nADAPTER ../elsewhere/lora.gguf 0.5\n")
    return modelfile, lora


def digest_of(path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def names(client) -> set[str]:
    return {model.name for model in client.list_models()}


def spawn(env, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        CLI[0], [*CLI[1:], *args], env=env, cwd=str(ROOT), encoding="utf-8", timeout=90
    )


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_file_outside_the_folder_is_sent_only_after_a_yes(env, client, project):
    modelfile, lora = project
    child = spawn(env, "create", "asked", "-f", str(modelfile))
    child.expect_exact("ADAPTER ../elsewhere/lora.gguf is outside the Modelfile's folder")
    child.expect_exact("Upload it to the localllm daemon? [y/N] ")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "lora.gguf was not uploaded; nothing was created" in child.before
    assert not client.blob_exists(digest_of(lora)) and "asked:latest" not in names(client)

    child = spawn(env, "create", "asked", "-f", str(modelfile))
    child.expect_exact("Upload it to the localllm daemon? [y/N] ")
    child.sendline("y")
    child.expect_exact("success")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert client.blob_exists(digest_of(lora)) and "asked:latest" in names(client)
    shown = run_cli(["show", "asked"], env)
    assert f"LoRA {digest_of(lora)[7:19]}" in shown.stdout and "scale 0.5" in shown.stdout


def test_without_a_terminal_only_yes_sends_a_file_outside_the_folder(env, client, project):
    modelfile, lora = project
    refused = run_cli(["create", "scripted", "-f", str(modelfile)], env)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: the Modelfile names files outside its folder")
    assert "(ADAPTER lora.gguf)" in refused.stderr and "Pass --yes" in refused.stderr
    assert str(modelfile.parent.parent) not in refused.stderr
    assert not client.blob_exists(digest_of(lora)) and "scripted:latest" not in names(client)
    created = run_cli(["create", "scripted", "-f", str(modelfile), "--yes"], env)
    assert created.returncode == 0, created.stderr
    assert client.show("scripted").adapters[0].scale == 0.5


@pytest.mark.parametrize("kind", NOT_ADAPTERS)
def test_what_is_not_a_lora_adapter_is_refused_before_any_upload(
    env, client, tmp_path, tiny_model_path, kind
):
    path, message = not_an_adapter(kind, tmp_path, tiny_model_path)
    (tmp_path / "Modelfile").write_text(f"FROM tiny\nADAPTER ./{path.name}\n")
    result = run_cli(["create", "bad", "-f", str(tmp_path / "Modelfile"), "--yes"], env)
    assert result.returncode == 1
    assert result.stderr == f"Error: ADAPTER {message}" + result.stderr.split(message, 1)[1]
    assert str(tmp_path) not in result.stderr and result.stderr.count("\n") == 1
    assert not client.blob_exists(digest_of(path)) and "bad:latest" not in names(client)
