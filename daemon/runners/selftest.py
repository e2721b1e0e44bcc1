"""``python -m localllm.daemon.runners.selftest``: prove that the installed llama.cpp build runs
here.

It does what a runner does, in runners of its own: a tiny generated Q8_0 model and a Q4_0 one
are loaded, two prompts are read together (a batch of many rows: ggml's AMX tile path), tokens
are generated (one row: the AVX-512 VNNI path) and two inputs are embedded. A build that
executes instructions this CPU cannot run (ggml compiled ``-march=native`` where the hypervisor
hides AMX, or a build from another computer) then dies by SIGILL here, in a child process,
rather than in a user's first chat.

Prints one JSON object (:class:`SelfTest`); the exit status is 0 when every step ran, 1 when a
runner was killed by a signal, 2 when a step failed otherwise. The installer
(``installers/llama_build.py``) and ``localllm doctor`` run it; the daemon calls
:func:`run_selftest` when a runner crashes while loading, to tell the build's fault from the
model file's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from localllm.model_registry.tiny_gguf import write_tiny_model

from .build_probe import probe_build
from .cpu_features import build_features, cpu_flags, missing_from_cpu
from .process import RunnerProcess
from .types import (
    EmbedCall,
    GenerateCall,
    IncompatibleBuildError,
    RunnerError,
    RunnerSpec,
    SamplingParams,
)

__all__ = ["LOAD_CRASH_SIGNALS", "SelfTest", "explain_load_crash", "main", "run_selftest"]


# Widths that are multiples of 32, as ggml's AMX kernels ask of Q4_0 and Q8_0 weights.
class _Shape(TypedDict):
    n_layer: int
    n_embd: int
    n_head: int
    n_ff: int


_SHAPE: _Shape = {"n_layer": 2, "n_embd": 128, "n_head": 4, "n_ff": 384}
_FileType = Literal["Q8_0", "Q4_0"]  # of ``write_tiny_model``'s, those ggml's AMX path reads
_FILE_TYPES: tuple[_FileType, ...] = ("Q8_0", "Q4_0")
_PROMPTS = (
    "The quick brown fox jumps over the lazy dog while the cat watches from the wall. " * 3,
    "Hello world, this is a test of reading two prompts together in one batch. " * 3,
)
# A runner killed by one of these while loading: a damaged model file, or a build made for
# another CPU (the self-test tells which). SIGILL is always the build's: see RunnerProcess.
LOAD_CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGBUS"})


@dataclass(frozen=True)
class SelfTest:
    """What the self-test found. ``missing_from_cpu``: instruction sets the build was compiled
    for that this CPU does not list (known without running anything)."""

    ok: bool
    # the probe's report (version, system_info...)
    build: dict[str, Any] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)
    missing_from_cpu: list[str] = field(default_factory=list)
    failed_step: str | None = None  # "Q8_0: reading two prompts in one batch", ...
    exit_signal: str | None = None  # the signal that killed a runner ("SIGILL"), if one did
    message: str | None = None

    @property
    def exit_status(self) -> int:
        return 0 if self.ok else 1 if self.exit_signal else 2


async def run_selftest(env: Mapping[str, str] | None = None) -> SelfTest:
    """Run every step; ``env`` is the runners' environment (None inherits this process's)."""
    build = await probe_build(env)
    features = build_features(build.get("system_info", ""))
    missing = missing_from_cpu(features, cpu_flags())
    with tempfile.TemporaryDirectory(prefix="localllm-selftest-") as work:
        checks = [_check(Path(work), file_type, env) for file_type in _FILE_TYPES]
        failures = [failure for failure in await asyncio.gather(*checks) if failure]
    if not failures:
        return SelfTest(True, build, features, missing)
    step, error = next((f for f in failures if f[1].exit_signal), failures[0])
    return SelfTest(False, build, features, missing, failed_step=step,
                    exit_signal=error.exit_signal, message=str(error))  # fmt: skip


async def _check(
    work: Path, file_type: _FileType, env: Mapping[str, str] | None
) -> tuple[str, RunnerError] | None:
    """None when a ``file_type`` model went through every step; else the step and its error."""
    path = work / f"selftest-{file_type.lower()}.gguf"
    await asyncio.to_thread(write_tiny_model, path, file_type=file_type, **_SHAPE)
    step = [f"{file_type}: loading"]
    try:
        await _exercise(path, file_type, env, step)
    except RunnerError as error:
        return step[0], error
    return None


async def explain_load_crash(error: RunnerError, env: Mapping[str, str] | None) -> RunnerError:
    """What a runner killed while loading (``LOAD_CRASH_SIGNALS``) means: the build's fault
    when the self-test's runners crash too, else most likely the model file's."""
    verdict = await run_selftest(env)
    if verdict.exit_signal:
        return IncompatibleBuildError(
            f"a runner was killed by {error.exit_signal} while loading, and the build's "
            f"self-test was killed by {verdict.exit_signal} too",
            exit_signal=error.exit_signal,
        )
    sentence = (
        "; llama.cpp itself passed its self-test on this computer, so the model file is "
        "probably damaged or of a kind this llama.cpp cannot load (pull or import it again)"
    )
    head, _, log_lines = str(error).partition("; its last log lines:")
    tail = f"; its last log lines:{log_lines}" if log_lines else ""
    return type(error)(head + sentence + tail, exit_signal=error.exit_signal)


async def _exercise(
    path: Path, file_type: str, env: Mapping[str, str] | None, step: list[str]
) -> None:
    """Load ``path`` in a runner and use it as requests would; ``step[0]`` names the step."""
    spec = RunnerSpec(f"self-test {file_type}", (str(path),), num_ctx=512, num_parallel=2)
    runner = await RunnerProcess.start(spec, env=env)
    try:
        step[0] = f"{file_type}: reading two prompts in one batch and generating"
        await asyncio.gather(*(_generate(runner, prompt, 8) for prompt in _PROMPTS))
        step[0] = f"{file_type}: generating one stream"
        await _generate(runner, _PROMPTS[0], 4)
        step[0] = f"{file_type}: embedding"
        await runner.embed(EmbedCall(("hello world", "a second input to embed")))
    finally:
        await runner.stop()


async def _generate(runner: RunnerProcess, prompt: str, tokens: int) -> None:
    params = SamplingParams(max_tokens=tokens, seed=1, ignore_eos=True)
    async for _ in runner.generate(GenerateCall(prompt, params)):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localllm.daemon.runners.selftest")
    parser.description = "Prove that the installed llama.cpp build runs on this computer."
    parser.parse_args(argv)
    result = asyncio.run(run_selftest())
    print(json.dumps(asdict(result)), flush=True)
    return result.exit_status


if __name__ == "__main__":
    sys.exit(main())
