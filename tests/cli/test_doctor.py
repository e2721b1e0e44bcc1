"""``localllm doctor``: the report with no daemon, with a real one, ``--json``, and the rules
that turn findings into warnings, errors and the exit status."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from localllm.app.cli.doctor import findings, render_table, to_json
from localllm.app.cli.doctor.probes import (
    llama_build,
    parse_meminfo,
    parse_nvidia_smi,
    parse_vm_stat,
    store_state,
)
from localllm.app.cli.doctor.render import feature_summary
from localllm.app.cli.doctor.report import DaemonState, Gpu, LlamaBuild, Memory, Report, StoreState
from localllm.app.cli.main import main
from localllm.daemon.client.launcher import daemon_answers
from tests.support.daemon import Daemon, free_port, make_store

JSON_KEYS = {"version", "platform", "llama", "gpus", "memory", "store", "dirs", "daemon"}
JSON_KEYS |= {"findings", "ok"}


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """Everything under ``tmp_path``, and a daemon address where nothing listens."""
    return {
        "LOCALLLM_HOST": f"127.0.0.1:{free_port()}",
        "LOCALLLM_MODELS": str(tmp_path / "models"),
        "LOCALLLM_DATA": str(tmp_path / "data"),
        "LOCALLLM_CONFIG": str(tmp_path / "config"),
        "LOCALLLM_LOGS": str(tmp_path / "logs"),
    }


def doctor(env, capsys, *args: str) -> tuple[int, str]:
    status = main(["doctor", *args], env)
    out, err = capsys.readouterr()
    assert err == ""
    return status, out


@pytest.mark.slow  # the doctor's self-test loads llama.cpp models in a process
def test_no_daemon_running(env, capsys):
    status, out = doctor(env, capsys)
    assert status == 0
    for title in ("LLAMA.CPP", "GPU", "MEMORY", "MODEL STORE", "FOLDERS", "DAEMON"):
        assert f"\n{title}\n" in f"\n{out}"
    assert "llama-cpp-python   0.3.36" in out
    assert "backend            cpu (no GPU offload)" in out
    assert (
        "self-test          passed (Q8_0 and Q4_0 models: a batch, generation, embeddings)" in out
    )
    assert f"models             {env['LOCALLLM_MODELS']} (not created yet)" in out
    assert f"logs               {env['LOCALLLM_LOGS']}" in out
    assert "status             not running" in out
    assert out.rstrip().endswith("all good")
    url = "http://" + env["LOCALLLM_HOST"]
    assert not daemon_answers(url), "the doctor must not start the daemon"
    assert not Path(env["LOCALLLM_LOGS"], "daemon.log").exists()


@pytest.mark.slow  # the doctor's self-test loads llama.cpp models in a process
def test_json_shape(env, capsys):
    status, out = doctor(env, capsys, "--json")
    report = json.loads(out)
    assert status == 0 and set(report) == JSON_KEYS
    assert report["ok"] is True and report["findings"] == []
    llama = report["llama"]
    assert llama["version"] == "0.3.36" and llama["error"] is None
    assert llama["supports_gpu_offload"] is False and llama["backend"] == "cpu"
    assert llama["system_info"].startswith("CPU :")
    assert (llama["runs_here"], llama["exit_signal"], llama["missing_from_cpu"]) == (True, None, [])
    assert Path(llama["library_dir"], "").is_dir()
    assert isinstance(report["gpus"], list)
    assert report["memory"]["total"] > report["memory"]["available"] > 0
    store = report["store"]
    assert store["path"] == env["LOCALLLM_MODELS"]
    assert (store["exists"], store["writable"]) == (False, True)
    assert store["disk_total"] >= store["disk_free"] > 0
    assert report["dirs"] == {
        "data": env["LOCALLLM_DATA"],
        "config": env["LOCALLLM_CONFIG"],
        "logs": env["LOCALLLM_LOGS"],
    }
    assert report["daemon"] == {
        "url": "http://" + env["LOCALLLM_HOST"],
        "running": False,
        "local": True,
        "version": None,
        "models_dir": None,
        "error": None,
        "store_agrees": None,
    }


@pytest.mark.slow
def test_a_running_daemon(env, capsys, tmp_path, tiny_model_path):
    store = make_store(tmp_path / "models", {"tiny": tiny_model_path})
    with Daemon(store, tmp_path / "daemon-logs") as daemon:
        env = {**env, "LOCALLLM_HOST": f"127.0.0.1:{daemon.port}"}
        status, out = doctor(env, capsys)
        assert status == 0, out
        assert "status             running, version 0.1.0" in out
        report = json.loads(doctor(env, capsys, "--json")[1])
        assert report["daemon"]["models_dir"] == str(store)
        assert report["daemon"]["store_agrees"] is True
        assert "model store        the same as this shell's" in out

        elsewhere = {**env, "LOCALLLM_MODELS": str(tmp_path / "elsewhere")}
        status, out = doctor(elsewhere, capsys)
        assert status == 1
        assert f"model store        DIFFERENT: {store}" in out
        assert f"error: the daemon serves the models in {store}" in out


@pytest.mark.slow
def test_a_daemon_that_wants_an_api_key(env, capsys, tmp_path):
    with Daemon(tmp_path / "models", tmp_path / "logs", env={"LOCALLLM_API_KEY": "k3y"}) as d:
        env = {**env, "LOCALLLM_HOST": f"127.0.0.1:{d.port}"}
        status, out = doctor(env, capsys)
        assert status == 1
        assert "error: the daemon wants an API key: set LOCALLLM_API_KEY" in out
        status, out = doctor({**env, "LOCALLLM_API_KEY": "k3y"}, capsys)
        assert status == 0 and "running, version 0.1.0" in out


class _Other(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html>a web server</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_something_else_on_the_daemon_port_is_an_error(env, capsys):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Other)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        status, out = doctor({**env, "LOCALLLM_HOST": f"127.0.0.1:{server.server_port}"}, capsys)
    finally:
        server.shutdown()
        server.server_close()
    assert status == 1
    assert "error: something other than localllm answers" in out
    assert out.rstrip().endswith("1 problem found")


# -- the rules, on made-up reports ----------------------------------------------------------


def report(**changes) -> Report:
    fields = {
        "version": "0.1.0",
        "platform": "Linux x86_64, Python 3.11.7",
        "llama": LlamaBuild("0.3.36", False, "cpu", "CPU : AVX2 = 1 | F16C = 0 |", "/lib"),
        "gpus": (),
        "memory": Memory(16 << 30, 8 << 30),
        "store": StoreState(Path("/store"), True, True, 500 * 10**9, 100 * 10**9),
        "dirs": {"data": Path("/data"), "config": Path("/config"), "logs": Path("/logs")},
        "daemon": DaemonState("http://127.0.0.1:11435", running=False),
    }
    return Report(**{**fields, **changes})


def test_a_healthy_report_has_no_findings():
    assert findings(report()) == []


def test_a_gpu_the_build_cannot_use_is_a_warning():
    rtx = Gpu("NVIDIA GeForce RTX 4090", "nvidia", 24 << 30, 20 << 30, "550.54")
    [finding] = findings(report(gpus=(rtx,)))
    assert finding.level == "warning"
    assert "CPU only, so the NVIDIA GeForce RTX 4090 is not used" in finding.message
    assert "llama_build.py --install" in finding.message
    cuda = LlamaBuild("0.3.36", True, "cuda", "CUDA : ARCHS = 890 |", "/lib")
    assert findings(report(gpus=(rtx,), llama=cuda)) == []


def test_a_build_that_does_not_load_is_an_error():
    broken = LlamaBuild(error="OSError: libcudart.so.12: cannot open shared object file")
    [finding] = findings(report(llama=broken))
    assert finding.level == "error" and "libcudart.so.12" in finding.message
    text = render_table(report(llama=broken), [finding])
    assert "does not load: OSError: libcudart.so.12" in text
    assert text.endswith("1 problem found")
    assert to_json(report(llama=broken), [finding])["ok"] is False


def test_store_problems():
    read_only = StoreState(Path("/store"), True, False, 10**12, 10**11)
    assert [f.level for f in findings(report(store=read_only))] == ["error"]
    full = StoreState(Path("/store"), True, True, 10**12, 2 * 10**9)
    [finding] = findings(report(store=full))
    assert finding.level == "warning" and "only 2.0 GB free" in finding.message


def test_the_store_is_compared_only_when_the_daemon_names_it_and_runs_here(tmp_path):
    store = StoreState(tmp_path, True, True)
    same = DaemonState("http://127.0.0.1:1", True, True, "0.1.0", str(tmp_path / "." / ""))
    assert to_json(report(store=store, daemon=same), [])["daemon"]["store_agrees"] is True
    unknown = DaemonState("http://127.0.0.1:1", True, True, "0.1.0", None)
    assert to_json(report(store=store, daemon=unknown), [])["daemon"]["store_agrees"] is None
    assert "unknown (this daemon does not report its store)" in render_table(
        report(store=store, daemon=unknown), []
    )
    other = DaemonState("http://127.0.0.1:1", True, True, "0.1.0", "/srv/models")
    [finding] = findings(report(store=store, daemon=other))
    assert finding.level == "error"
    assert finding.message.startswith(f"the daemon serves the models in /srv/models, but this "
                                      f"shell would use {tmp_path}")  # fmt: skip
    assert "model store        DIFFERENT: /srv/models" in render_table(
        report(store=store, daemon=other), [finding]
    )
    remote = DaemonState("http://10.0.0.5:11435", True, False, "0.1.0", "/srv/models")
    assert findings(report(store=store, daemon=remote)) == []
    assert "on another computer" in render_table(report(store=store, daemon=remote), [])


def test_a_build_that_does_not_load_reports_the_last_line_of_its_error():
    def run(argv, timeout):
        build = {"error": "OSError: libllama.so: bad ELF"}
        report = {"ok": False, "build": build, "failed_step": "Q8_0: loading", "message": "..."}
        return subprocess.CompletedProcess(argv, 2, json.dumps(report) + "\n", "")

    assert llama_build(run).error == "OSError: libllama.so: bad ELF"

    def broken(argv, timeout):
        stderr = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: no gguf\n"
        return subprocess.CompletedProcess(argv, 1, "", stderr)

    assert llama_build(broken).error == "ModuleNotFoundError: no gguf"

    def crash(argv, timeout):
        return subprocess.CompletedProcess(argv, -4, "", "")  # SIGILL

    assert llama_build(crash).error == "the self-test crashed (SIGILL)"


def test_instruction_sets_the_cpu_lacks_and_a_failed_self_test_are_errors():
    built_for_avx512 = LlamaBuild(
        "0.3.36", False, "cpu", "CPU : AVX2 = 1 | AVX512 = 1 |", "/lib",
        runs_here=True, missing_from_cpu=("AVX512",),
    )  # fmt: skip
    [finding] = findings(report(llama=built_for_avx512))
    assert finding.level == "error"
    assert "uses CPU instructions this computer does not have (AVX512)" in finding.message
    assert "llama_build.py --install" in finding.message
    segv = LlamaBuild(
        "0.3.36", False, "cpu", "CPU : AVX2 = 1 |", "/lib", runs_here=False,
        failed_step="Q4_0: embedding", exit_signal="SIGSEGV", failure="the runner ...",
    )  # fmt: skip
    [finding] = findings(report(llama=segv))
    assert finding.message.startswith(
        "llama.cpp's self-test was killed by SIGSEGV (Q4_0: embedding): the runner ..."
    )
    assert "FAILED: killed by SIGSEGV (Q4_0: embedding)" in render_table(report(llama=segv), [])


def test_apple_silicon_and_nvidia_gpus_are_listed():
    from localllm.app.cli.doctor.probes import apple_gpu

    def run(argv, timeout):
        return subprocess.CompletedProcess(argv, 0, "Apple M2 Pro\n", "")

    [gpu] = apple_gpu("Darwin", "arm64", run)
    assert (gpu.name, gpu.vendor, gpu.memory_total) == ("Apple M2 Pro GPU (Metal)", "apple", None)
    assert apple_gpu("Darwin", "x86_64", run) == [] and apple_gpu("Linux", "arm64", run) == []
    text = render_table(report(gpus=(gpu,)), [])
    assert "Apple M2 Pro GPU (Metal)" in text and "shares the computer's memory" in text


def test_parsers():
    smi = "NVIDIA GeForce RTX 4090, 24564, 23000, 550.54.14\nNVIDIA A100-SXM4-80GB, 81920, 1, 535\n"
    first, second = parse_nvidia_smi(smi + "garbage\n")
    assert first == Gpu("NVIDIA GeForce RTX 4090", "nvidia", 24564 << 20, 23000 << 20, "550.54.14")
    assert second.name == "NVIDIA A100-SXM4-80GB"
    meminfo = "MemTotal:       16384 kB\nMemFree:  1024 kB\nMemAvailable:   8192 kB\n"
    assert parse_meminfo(meminfo) == Memory(16384 * 1024, 8192 * 1024)
    vm_stat = (
        "Mach Virtual Memory Statistics: (page size of 16384 bytes)\n"
        "Pages free:                               10.\n"
        "Pages active:                            500.\n"
        "Pages inactive:                           20.\n"
        "Pages speculative:                         2.\n"
    )
    assert parse_vm_stat(vm_stat) == 32 * 16384
    assert feature_summary("CPU : SSE3 = 1 | AVX512 = 0 | AVX2 = 1 | Metal : EMBED = 1 |") == (
        "CPU: SSE3 AVX2; Metal: EMBED"
    )


def test_store_state_of_a_store_not_created_yet(tmp_path):
    state = store_state(tmp_path / "a" / "b")
    assert (state.exists, state.writable) == (False, True)
    assert state.disk_free and state.disk_total
