"""How the inputs an audit found quadratic scale now: each construct timed at N, 2N and 4N,
against a construct known to be linear (``json.dumps`` of N short strings) timed in the same
run. Linear work takes about 4x as long at 4N; quadratic work about 16x.

    python bench/hostile_inputs.py            # this checkout
    PYTHONPATH=/path/to/other/checkout python bench/hostile_inputs.py   # another one

Each time is the best of 5; the machine may be shared, so compare ratios within one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from localllm.daemon.api.openai_responses import ResponsesRequest
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.late_system import fold_late_system
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.inference.thinking_split import HarmonySplitter
from localllm.daemon.remotes.stream_state import StreamState
from localllm.daemon.remotes.transport import lines
from localllm.daemon.server.openai.responses_translate import responses_turn
from localllm.model_registry.errors import ModelfileError
from localllm.model_registry.modelfile import parse_modelfile


def best(work: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def reference(n: int) -> Callable[[], object]:
    items = [f"item {i}" for i in range(n * 100)]
    return lambda: json.dumps(items)


def reasoning_items(n: int) -> Callable[[], object]:
    item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "x" * 1000}]}
    items = [{"type": "message", "role": "user", "content": "hi"}, *[item] * n]
    items.append({"type": "message", "role": "assistant", "content": "ok"})
    request = ResponsesRequest(model="m", input=items)
    return lambda: responses_turn(request, None)


def function_calls(n: int) -> Callable[[], object]:
    calls = [{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"}
             for i in range(n)]  # fmt: skip
    request = ResponsesRequest(model="m", input=calls)
    return lambda: responses_turn(request, None)


def modelfile_digits(n: int) -> Callable[[], object]:
    text = f"FROM x\nPARAMETER temperature {'1' * n}x\n"

    def parse() -> None:
        with contextlib.suppress(ModelfileError):  # refused, or (before) parsed
            parse_modelfile(text)

    return parse


def keep_alive_digits(n: int) -> Callable[[], object]:
    text = "1" * n + "x"

    def parse() -> None:
        with contextlib.suppress(BadRequestError):
            parse_keep_alive(text)

    return parse


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]):
        self._chunks = chunks

    async def __aiter__(self):
        for chunk in self._chunks:
            yield chunk


def remote_line(n: int) -> Callable[[], object]:
    line = b"data: " + b"x" * (n * 64) + b"\n"
    chunks = [line[i : i + 256] for i in range(0, len(line), 256)]

    async def read() -> None:
        response = httpx.Response(200, stream=_Chunks(chunks))
        async for _ in lines(response, "r", time.monotonic() + 600):
            pass

    return lambda: asyncio.run(read())


def tool_arguments(n: int) -> Callable[[], object]:
    def stream() -> None:
        state = StreamState("r")
        state.start_call(0, "c", "f")
        for _ in range(n * 10):
            state.add_arguments(0, "x" * 64)
        state.tool_calls()

    return stream


def harmony_header(n: int) -> Callable[[], object]:
    def feed() -> None:
        splitter = HarmonySplitter(opened=False)
        splitter.feed("<|start|>assistant")
        for _ in range(n * 10):
            splitter.feed("xxxxxxxx")

    return feed


def late_system_messages(n: int) -> Callable[[], object]:
    chat: list[dict[str, object]] = [{"role": "user", "content": "hi"}]
    for turn in range(n):
        chat += [{"role": "assistant", "content": f"a{turn}"}, {"role": "system", "content": "s"}]
    return lambda: fold_late_system(chat)


@functools.cache
def _tiny_reranker() -> tuple[object, object]:
    """The tiny BGE-style reranker (512 positions), written and loaded in this process once,
    with the router that keeps llama.cpp's load lines off the table (kept as long as the
    model: llama.cpp calls it)."""
    import llama_cpp

    from localllm.daemon.runners.types import RunnerSpec
    from localllm.daemon.runners.worker.model import Model
    from localllm.daemon.runners.worker.system import LogRouter
    from tests.support.model_writers.reranker import write_tiny_reranker

    path = write_tiny_reranker(Path(tempfile.mkdtemp()) / "reranker.gguf")
    router = LogRouter(verbose=False)
    llama_cpp.llama_backend_init()
    spec = RunnerSpec(model_name="bench", model_paths=(str(path),), num_ctx=512,
                      num_threads=1, embedding_only=True)  # fmt: skip
    return Model.load(spec), router


def rerank_pairs(n: int) -> Callable[[], object]:
    """A rerank request's pairs at N documents with a 200-token query, made as the runner
    makes them: counted against the budget, then each made (as its batch would make it)."""
    from localllm.daemon.runners.worker.pairs import PairFormat

    model, _router = _tiny_reranker()
    query = "word " * 100  # 201 tokens of the tiny vocabulary; at 4N = 8,000: 1.7M pair tokens
    documents = [f"document number {i} about the capital" for i in range(n)]
    pairs = PairFormat(model, 512)

    def build() -> None:
        if not hasattr(pairs, "query"):  # before: every pair made at once, the query each time
            [pairs.pair(query, document, True) for document in documents]
            return
        made = pairs.query(query)
        made.measure(documents, True)
        for document in documents:
            made.pair(document, True)

    return build


CONSTRUCTS = {
    "reference: json.dumps of 100N strings": reference,
    "Responses: N reasoning items of 1,000 characters": reasoning_items,
    "Responses: N function calls in a row": function_calls,
    "Modelfile: a number of N digits and a letter": modelfile_digits,
    "keep_alive: N digits and a letter": keep_alive_digits,
    "remote stream: a 64N-byte line in 256-byte chunks": remote_line,
    "remote tool call: 10N argument parts of 64 characters": tool_arguments,
    "harmony header: 10N pieces that never end it": harmony_header,
    "late system: N assistant and N system messages after a user's": late_system_messages,
    "rerank: N documents with a 200-token query made into pairs": rerank_pairs,
}


def main() -> None:
    n = 2000
    print(f"| construct (N = {n:,}) | N | 2N | 4N | 4N / N |")
    print("| --- | --- | --- | --- | --- |")
    for name, make in CONSTRUCTS.items():
        times = [best(make(n * k)) for k in (1, 2, 4)]
        shown = " | ".join(f"{t * 1000:,.1f} ms" for t in times)
        print(f"| {name} | {shown} | {times[2] / times[0]:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
