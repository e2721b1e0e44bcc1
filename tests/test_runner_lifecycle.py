"""A runner's life: loading (good, sharded, broken), crashing, stopping, and never lingering."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from localllm.daemon.runners.frames import LoadingEv, ReadyEv, SpecOp, decode_event, encode
from localllm.daemon.runners.process import RunnerProcess
from localllm.daemon.runners.protocol import FrameReader, encode_frame
from localllm.daemon.runners.types import GenerateCall, RunnerCrashed, RunnerError, SamplingParams
from tests.support.polling import wait_for
from tests.support.runner import Harness, collect, make_spec, split_gguf


@pytest.fixture
def harness():
    h = Harness()
    yield h
    h.close()


@pytest.fixture(scope="module")
def model_path(tiny_model_path):
    """The suite's shared tiny model (conftest writes it once per session)."""
    return tiny_model_path


def test_sigkill_mid_stream_raises_crashed_and_a_new_runner_works(harness, model_path, tmp_path):
    log = tmp_path / "runner.log"
    runner = harness.start(make_spec(model_path), log_path=log)
    params = SamplingParams(temperature=0.0, max_tokens=None)

    async def scenario():
        stream = runner.generate(GenerateCall("Hello", params))
        await anext(stream)
        os.kill(runner.pid, signal.SIGKILL)
        with pytest.raises(RunnerCrashed) as caught:  # not a stream left waiting for tokens
            async for _ in stream:
                pass
        return caught.value

    message = str(harness.run(scenario()))
    assert "tiny-test" in message and "SIGKILL" in message
    assert "last log lines" in message and "ready in" in message  # quotes the runner's stderr
    assert runner.state == "crashed" and not runner.alive
    with pytest.raises(RunnerCrashed):
        harness.run(runner.tokenize("x"))
    assert "starting runner for tiny-test" in log.read_text()

    fresh = harness.start(make_spec(model_path))
    assert harness.run(collect(fresh, "Hello")).done.reason == "length"


def test_python_error_in_the_worker_is_a_crash_with_its_traceback(harness, model_path):
    runner = harness.start(make_spec(model_path))

    async def scenario():
        stream = runner.generate(GenerateCall("Hello", SamplingParams(max_tokens=None)))
        await anext(stream)
        malformed = encode_frame({"op": "generate", "id": 999})  # no "req": no request
        runner._proc.stdin.write(malformed)
        with pytest.raises(RunnerCrashed) as caught:
            async for _ in stream:
                pass
        return str(caught.value)

    message = harness.run(scenario())
    assert "exit code 1" in message and "ProtocolError" in message


def test_not_a_gguf_file_fails_fast_with_a_clear_message(harness, tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"<html>not a model</html>" * 100)
    with pytest.raises(RunnerError, match="not a GGUF model file"):  # not a load timeout
        harness.start(make_spec(bad))


def test_truncated_gguf_fails_with_llama_cpp_reason(harness, model_path, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(model_path.read_bytes()[:100_000])
    with pytest.raises(RunnerError, match="cannot load model 'tiny-test'") as caught:
        harness.start(make_spec(cut))
    assert "corrupted or incomplete" in str(caught.value)
    assert not isinstance(caught.value, RunnerCrashed)


def test_missing_file(harness, tmp_path):
    with pytest.raises(RunnerError, match="not found"):
        harness.start(make_spec(tmp_path / "nope.gguf"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO to block the load")
def test_a_load_that_hangs_times_out(harness, tmp_path):
    fifo = tmp_path / "stuck.gguf"
    os.mkfifo(fifo)  # opening it blocks forever: a stand-in for a hung filesystem
    with pytest.raises(RunnerError, match="did not load within 2 s"):
        harness.start(make_spec(fifo), start_timeout=2)


def test_sharded_model_loads_from_its_splits(harness, model_path, tmp_path):
    shards = split_gguf(model_path, tmp_path / "tiny.gguf", max_tensors=8)
    assert len(shards) == 3
    sharded = harness.start(make_spec(tuple(shards)))
    single = harness.start(make_spec(model_path))
    assert harness.run(collect(sharded, "Hello")).text == harness.run(collect(single, "Hello")).text


def test_stop_is_graceful_and_fails_later_calls(harness, model_path):
    runner = harness.start(make_spec(model_path))
    harness.run(runner.stop())
    assert runner.returncode == 0 and runner.state == "stopped" and not runner.alive
    with pytest.raises(RunnerError, match="stopped"):
        harness.run(runner.tokenize("x"))


def test_worker_exits_when_stdin_closes(model_path):
    """The daemon dying closes the runner's stdin; the runner must not linger as an orphan."""
    spec = make_spec(model_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "localllm.daemon.runners.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        proc.stdin.write(encode_frame(encode(SpecOp(spec))))
        proc.stdin.flush()
        reader = FrameReader(proc.stdout)
        assert decode_event(reader.read()) == LoadingEv()
        assert isinstance(decode_event(reader.read()), ReadyEv)
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_runner_dies_with_its_daemon(model_path, tmp_path):
    """A daemon killed with SIGKILL gets no chance to clean up; its runner still goes away."""
    script = tmp_path / "fake_daemon.py"  # not daemon.py: that would shadow the package
    script.write_text(
        "import asyncio, os, sys\n"
        "from localllm.daemon.runners.process import RunnerProcess\n"
        "from localllm.daemon.runners.types import RunnerSpec\n"
        "async def main():\n"
        f"    spec = RunnerSpec('t', ({str(model_path)!r},), num_ctx=256, num_threads=1)\n"
        "    runner = await RunnerProcess.start(spec)\n"
        "    print(runner.pid, flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )
    root = Path(__file__).resolve().parents[1]
    daemon = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, cwd=root, text=True
    )
    try:
        runner_pid = int(daemon.stdout.readline())
        daemon.kill()
        daemon.wait()
        assert wait_for(lambda: not _alive(runner_pid), 10), "the runner outlived its daemon"
    finally:
        daemon.kill()


def _alive(pid: int) -> bool:
    if Path("/proc").is_dir():  # Linux: a zombie waiting for init to reap it counts as gone
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_concurrent_starts_do_not_interfere(model_path):
    async def scenario():
        spec = make_spec(model_path)
        runners = await asyncio.gather(*(RunnerProcess.start(spec) for _ in range(2)))
        try:
            return [r.pid for r in runners]
        finally:
            await asyncio.gather(*(r.stop() for r in runners))

    pids = asyncio.run(scenario())
    assert len(set(pids)) == 2
