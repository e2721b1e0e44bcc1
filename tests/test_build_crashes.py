"""A llama.cpp build this computer cannot run: the self-test proves it, and a runner killed by
SIGILL (or crashing while loading when the build is at fault) is one clear error over HTTP and
in the CLI, never a generic "runner exited".

The runners here really die by the signal, from their own process, where a build made for
another CPU would: at the first batch decode (ggml's AMX tile path), or while loading
(``tests/support/crashing_build``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
import pytest

from localllm.daemon.runners.process import RunnerProcess
from localllm.daemon.runners.types import REBUILD_COMMAND, IncompatibleBuildError, RunnerSpec
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.cli_e2e import cli_env, run_cli
from tests.support.crashing_build import crashing_build
from tests.support.daemon import ROOT, Daemon, make_store

pytestmark = pytest.mark.slow

CANNOT_RUN = "this llama.cpp build uses CPU instructions this computer cannot run"


def selftest(env=None) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "localllm.daemon.runners.selftest"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def q8_model(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("q8") / "tiny-q8.gguf", file_type="Q8_0")


def test_the_self_test_passes_on_the_build_installed_here():
    status, report = selftest()
    assert (status, report["ok"], report["failed_step"]) == (0, True, None)
    assert report["build"]["llama_cpp_version"] == "0.3.36" and report["features"]
    assert report["missing_from_cpu"] == []


def test_the_self_test_says_no_when_a_batch_decode_traps(tmp_path):
    status, report = selftest(crashing_build(tmp_path, "SIGILL", "batch"))
    assert (status, report["ok"], report["exit_signal"]) == (1, False, "SIGILL")
    assert report["failed_step"] == "Q8_0: reading two prompts in one batch and generating"
    assert report["message"].startswith(CANNOT_RUN) and REBUILD_COMMAND in report["message"]


def test_a_runner_killed_by_sigill_while_loading_names_the_build(tmp_path, q8_model):
    env = crashing_build(tmp_path / "hook", "SIGILL", "import")
    spec = RunnerSpec("tiny", (str(q8_model),), num_ctx=256)
    with pytest.raises(IncompatibleBuildError) as caught:
        asyncio.run(RunnerProcess.start(spec, env=env))
    assert caught.value.exit_signal == "SIGILL"
    assert str(caught.value).startswith(CANNOT_RUN)
    assert "'tiny' was killed by SIGILL while loading" in str(caught.value)


@pytest.fixture
def crashing_daemon(request, tmp_path, q8_model):
    """A daemon whose runners crash as the test's parameter says."""
    signal_name, at = request.param
    env = crashing_build(tmp_path / "hook", signal_name, at)
    store = make_store(tmp_path / "store", {"tiny": q8_model})
    with Daemon(store, tmp_path / "logs", env={"PYTHONPATH": env["PYTHONPATH"]}) as daemon:
        yield daemon


@pytest.mark.parametrize("crashing_daemon", [("SIGILL", "batch")], indirect=True)
def test_sigill_mid_request_is_one_clear_error_in_every_api_and_the_cli(crashing_daemon, tmp_path):
    url = crashing_daemon.url
    messages = [{"role": "user", "content": "Hello there, how are you today?"}]
    native = httpx.post(f"{url}/api/chat", json={"model": "tiny", "messages": messages,
                                                 "stream": False}, timeout=300)  # fmt: skip
    assert native.status_code == 500
    assert native.json()["error"].startswith(CANNOT_RUN)
    assert REBUILD_COMMAND in native.json()["error"]
    openai = httpx.post(f"{url}/v1/chat/completions", json={"model": "tiny", "messages": messages},
                        timeout=300)  # fmt: skip
    assert openai.status_code == 500
    error = openai.json()["error"]
    assert error["code"] == "incompatible_llama_build" and error["message"].startswith(CANNOT_RUN)

    result = run_cli(["run", "tiny", "Hello there, how are you today?"],
                     cli_env(tmp_path, crashing_daemon.port))  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: {CANNOT_RUN}")
    assert REBUILD_COMMAND in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("crashing_daemon", [("SIGSEGV", "import")], indirect=True)
def test_a_crash_while_loading_that_the_self_test_repeats_is_the_builds(crashing_daemon):
    body = {"model": "tiny", "prompt": "Hi", "stream": False}
    answer = httpx.post(f"{crashing_daemon.url}/api/generate", json=body, timeout=600)
    assert answer.status_code == 500
    message = answer.json()["error"]
    assert message.startswith(CANNOT_RUN)
    assert "killed by SIGSEGV while loading, and the build's self-test was killed by SIGSEGV" in (
        message
    )


@pytest.mark.parametrize("crashing_daemon", [("SIGSEGV", "load")], indirect=True)
def test_a_crash_while_loading_that_the_self_test_does_not_repeat_is_the_models(crashing_daemon):
    body = {"model": "tiny", "prompt": "Hi", "stream": False}
    answer = httpx.post(f"{crashing_daemon.url}/api/generate", json=body, timeout=600)
    assert answer.status_code == 500
    message = answer.json()["error"]
    assert not message.startswith(CANNOT_RUN)
    assert "exited while loading (killed by SIGSEGV)" in message
    assert "llama.cpp itself passed its self-test on this computer, so the model file" in message


def test_doctor_runs_the_self_test_and_names_the_fault(tmp_path):
    env = cli_env(tmp_path, 9, PYTHONPATH=crashing_build(tmp_path / "hook")["PYTHONPATH"])
    result = run_cli(["doctor"], env, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "self-test          FAILED: killed by SIGILL "
        "(Q8_0: reading two prompts in one batch and generating)"
    ) in result.stdout
    assert f"error: {CANNOT_RUN}: its self-test was killed by SIGILL" in result.stdout
    assert "installers/llama_build.py --install" in result.stdout
    report = json.loads(run_cli(["doctor", "--json"], env, timeout=600).stdout)
    assert report["ok"] is False
    assert (report["llama"]["runs_here"], report["llama"]["exit_signal"]) == (False, "SIGILL")
