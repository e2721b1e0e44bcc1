"""The runner's generation engine driven in this process, its frames read back: for tests that
need to reach into the engine (its decode plan, its speculator) or run it step by step."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence

from localllm.daemon.runners.protocol import FrameReader, FrameWriter
from localllm.daemon.runners.types import GenerateCall, RunnerSpec

__all__ = ["run_engine"]


def run_engine(
    model,
    spec: RunnerSpec,
    rounds: Sequence[Sequence[GenerateCall]],
    prepare: Callable[[object], None] | None = None,
) -> tuple[dict[int, list[int]], dict[int, dict]]:
    """Token ids and done frames (plus the whole ``text`` and its ``logprobs`` entries) by
    request id, ids counted from 1.
    Each round's requests run together, the rounds one after another on the same engine (its
    slots and caches reused); ``prepare`` gets the engine before the first request."""
    from localllm.daemon.runners.worker.engine import Engine  # imports llama_cpp: only when used

    ids: dict[int, list[int]] = defaultdict(list)
    done: dict[int, dict] = {}
    with tempfile.TemporaryFile() as sink:
        out = FrameWriter(sink.fileno())
        # One thread, so a resumed read can be compared token for token with a cold one:
        # with two, the window tests' greedy tokens parted from a cold read's at the 8th
        engine = Engine(model, spec, 1, out)
        if prepare is not None:
            prepare(engine)
        rid = 0
        for batch in rounds:
            for request in batch:
                rid += 1
                engine.submit(rid, request)
            while engine.busy:
                engine.step()
                out.flush()
        sink.seek(0)
        reader = FrameReader(sink)
        while (message := reader.read()) is not None:
            entry = done.setdefault(message["id"], {"text": "", "logprobs": []})
            if message["ev"] == "token":
                ids[message["id"]] += message["ids"]
                entry["text"] += message["text"]
                entry["logprobs"] += message.get("logprobs", ())
            elif message["ev"] == "done":
                entry.update(message)
    return dict(ids), done
