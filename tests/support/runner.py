"""Helpers for the runner tests: generated models, an event loop per module, stream collection.

Every runner test starts the real worker subprocess on a real GGUF written by
``model_registry.tiny_gguf``; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import gguf
import numpy as np

from localllm.daemon.runners.process import RunnerProcess
from localllm.daemon.runners.types import (
    DoneEvent,
    GenerateCall,
    RunnerSpec,
    SamplingParams,
    TokenEvent,
)
from localllm.model_registry.tiny_gguf import write_tiny_model

__all__ = [
    "GREEDY",
    "Harness",
    "Stream",
    "collect",
    "make_spec",
    "split_gguf",
    "write_tiny_model",
]

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=24)
TIMEOUT = 120.0


def make_spec(path: Path | tuple[Path, ...], **overrides) -> RunnerSpec:
    paths = path if isinstance(path, tuple) else (path,)
    values = {"num_ctx": 512, "num_parallel": 4, "num_threads": 1, "num_batch": 128}
    values.update(overrides)
    return RunnerSpec(model_name="tiny-test", model_paths=tuple(str(p) for p in paths), **values)


@dataclass
class Stream:
    """Everything one generation streamed."""

    events: list[TokenEvent] = field(default_factory=list)
    done: DoneEvent | None = None

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events)

    @property
    def token_ids(self) -> list[int]:
        return [t for e in self.events for t in e.token_ids]


async def collect(runner: RunnerProcess, prompt: str, params=GREEDY, **kw) -> Stream:
    stream = Stream()
    async for event in runner.generate(GenerateCall(prompt, params, **kw)):
        if isinstance(event, DoneEvent):
            stream.done = event
        else:
            stream.events.append(event)
    return stream


class Harness:
    """One event loop for a test module, so runners can outlive a single ``asyncio.run``."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._runners: list[RunnerProcess] = []

    def run(self, coro, timeout: float = TIMEOUT):
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def start(self, spec: RunnerSpec, **kw) -> RunnerProcess:
        runner = self.run(RunnerProcess.start(spec, **kw))
        self._runners.append(runner)
        return runner

    def close(self) -> None:
        for runner in self._runners:
            with contextlib.suppress(Exception):
                self.run(runner.stop(), timeout=30)
        self.loop.close()


def split_gguf(src: Path, dest: Path, max_tensors: int) -> list[Path]:
    """Rewrite ``src`` as shards ``<stem>-0000i-of-0000n.gguf`` (as Hugging Face serves them)."""
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(dest, arch, split_max_tensors=max_tensors)
    for key, value in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        kind = value.types[0]
        sub = value.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value.contents(), kind, sub_type=sub)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, np.array(tensor.data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return sorted(dest.parent.glob(f"{dest.stem}-*-of-*.gguf"))
