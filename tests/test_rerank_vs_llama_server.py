"""Our /v1/rerank against llama.cpp's own ``llama-server --rerank`` on the same generated
rerankers (BGE's layout and Qwen3-Reranker's, with its rerank prompt) and the same inputs: the
scores agree within float tolerance, and so do the token counts.

Runs where the bench's llama-server build exists (``python bench/llama_server_build.py``
builds it from the pinned llama-cpp-python's vendored llama.cpp); skipped, saying so,
elsewhere.
"""

from __future__ import annotations

import subprocess

import httpx
import pytest

from bench.llama_server_build import cached_binary, pinned_version
from tests.support.daemon import Daemon, free_port, make_store
from tests.support.model_writers.reranker import write_tiny_reranker
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

QUERY = "how do I patch a bicycle tyre"
DOCUMENTS = [
    "To fix a flat bicycle tyre, remove the wheel and patch the inner tube.",
    "Sourdough bread rises thanks to a starter.",
    "Inflate the tyre to the pressure printed on the sidewall.",
    "Jupiter is the largest planet of the solar system.",
    "x",
    "The Queen's Gambit offers a pawn to control the centre. " * 3,
]
# llama-server's own scores move by up to 5e-4 with how it batches the pairs (its slot count):
# ggml rounds the GELU input to f16 for its table, and a causal model's KV cache is f16
TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def llama_server():
    binary = cached_binary(pinned_version())
    if binary is None:
        pytest.skip("llama-server is not built; run `python bench/llama_server_build.py`")
    return binary


@pytest.fixture(scope="module", params=["bge", "qwen3"])
def reranker(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"rerank-{request.param}")
    return write_tiny_reranker(folder / "reranker.gguf", seed=7, style=request.param)


@pytest.fixture(scope="module")
def peer(llama_server, reranker, tmp_path_factory):
    port = free_port()
    log = (tmp_path_factory.mktemp("llama-server") / "server.log").open("wb")
    command = [str(llama_server), "-m", str(reranker), "--rerank", "--host", "127.0.0.1"]
    command += ["--port", str(port), "-c", "512", "-t", "1", "-np", "1"]  # one pair a batch
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: _healthy(url, process), timeout=120), "llama-server did not start"
        yield url
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _healthy(url: str, process: subprocess.Popen) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"llama-server exited with {process.returncode}")
    try:
        return httpx.get(url + "/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def ours(reranker, tmp_path_factory):
    root = tmp_path_factory.mktemp("rerank-ours")
    with Daemon(make_store(root / "store", {"reranker": reranker}), root / "logs") as daemon:
        yield daemon.url


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank", "/v1/reranking"])
def test_scores_equal_llama_servers(peer, ours, path):
    body = {"model": "reranker", "query": QUERY, "documents": DOCUMENTS}
    theirs = httpx.post(peer + path, json=body, timeout=120).json()
    mine = httpx.post(ours + path, json=body, timeout=120).json()
    want = {r["index"]: r["relevance_score"] for r in theirs["results"]}
    got = {r["index"]: r["relevance_score"] for r in mine["results"]}
    assert sorted(got) == sorted(want) == list(range(len(DOCUMENTS)))
    for index, score in want.items():
        assert abs(got[index] - score) <= TOLERANCE * max(1.0, abs(score)), (index, got, want)
    assert [r["index"] for r in mine["results"]] == [r["index"] for r in theirs["results"]]
    assert mine["usage"]["prompt_tokens"] == theirs["usage"]["prompt_tokens"]
