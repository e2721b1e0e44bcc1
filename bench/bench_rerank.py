"""Rerank: our /v1/rerank against ``llama-server --rerank`` (scores and time), and what
reranking does to document search (recall@3 and MRR on the labelled sets of the documents
tests).

    python bench/bench_rerank.py [--rounds 5] [--threads 2] [--documents 16]
        [--reranker NAME --url URL]

Against llama-server: both serve the same generated reranker
(tests/support/model_writers/reranker.py at a MiniLM-like size: 6 layers, n_embd 384) on
``--threads`` threads; each round sends the same query with ``--documents`` documents to each
(in alternating order) and times the answer. It prints the largest score difference and the
median time per request, ours/llama-server.
Skipped when llama-server is not built (bench/llama_server_build.py).

Document search: keyword search (BM25 over the documents tests' corpora) alone, and its best 30
reordered by a reranker: the generated one (random weights: it ranks at random) unless
``--reranker`` names one installed in the daemon at ``--url``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_serving import describe, free_port, machine, stop  # noqa: E402
from bench_vs_llama_server import start_llama_server, start_ours  # noqa: E402
from llama_server_build import cached_binary, pinned_version  # noqa: E402

MINILM = {"n_layer": 6, "n_embd": 384, "n_head": 12}
QUERY = "how do I patch a punctured bicycle tyre"
WORDS = ("tyre", "tube", "wheel", "patch", "pressure", "valve", "bread", "yeast", "moon", "tide")
HTTP = httpx.Client(timeout=600, limits=httpx.Limits(max_keepalive_connections=0))


def documents(count: int) -> list[str]:
    """``count`` different documents of 20-60 words."""
    return [
        " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(20 + i % 41))
        for i in range(count)
    ]


def rerank(url: str, texts: list[str], model: str = "bench") -> tuple[dict[int, float], float]:
    started = time.perf_counter()
    body = {"model": model, "query": QUERY, "documents": texts}
    answer = HTTP.post(url + "/v1/rerank", json=body)
    answer.raise_for_status()
    seconds = time.perf_counter() - started
    return {r["index"]: r["relevance_score"] for r in answer.json()["results"]}, seconds


def against_llama_server(args, work: Path) -> list[str]:
    binary = cached_binary(pinned_version())
    if binary is None:
        return ["llama-server is not built (python bench/llama_server_build.py): skipped"]
    from tests.support.model_writers.reranker import write_tiny_reranker

    model = write_tiny_reranker(work / "reranker.gguf", **MINILM)
    texts = documents(args.documents)
    ours, ours_url = start_ours(work / "ours", model, args.threads, 512)
    port = free_port()
    command = [str(binary), "-m", str(model), "--rerank", "-t", str(args.threads)]
    command += ["-c", "2048", "-np", "4", "--host", "127.0.0.1", "--port", str(port)]
    theirs, their_url = start_llama_server(work, command)
    times: dict[str, list[float]] = {"ours": [], "llama-server": []}
    worst = 0.0
    try:
        for url in (ours_url, their_url):
            rerank(url, texts)  # loads the model, warms the caches
        for round_ in range(args.rounds):
            turns = [("ours", ours_url), ("llama-server", their_url)]
            scores = {}
            for name, url in turns if round_ % 2 == 0 else turns[::-1]:
                scores[name], seconds = rerank(url, texts)
                times[name].append(seconds)
            theirs_now = scores["llama-server"]
            worst = max(worst, *(abs(scores["ours"][i] - s) for i, s in theirs_now.items()))
    finally:
        stop(ours)
        stop(theirs)
    ours_s, theirs_s = (statistics.median(times[n]) for n in ("ours", "llama-server"))
    return [
        f"Model: {describe(model)}; {args.documents} documents a request, {args.threads} threads, "
        f"{args.rounds} rounds; {machine()}.",
        "",
        "| | ours | llama-server | ours/llama-server |",
        "| --- | --- | --- | --- |",
        f"| median seconds a request | {ours_s:.3f} | {theirs_s:.3f} | {ours_s / theirs_s:.2f}x |",
        f"| documents/s | {args.documents / ours_s:.2f} | {args.documents / theirs_s:.2f} "
        f"| {theirs_s / ours_s:.2f}x |",
        "",
        f"Largest score difference over every document and round: {worst:.2e}.",
    ]


def labelled_sets():
    from tests.documents.files import QUESTIONS, write_corpus
    from tests.documents.near_misses import NEAR_MISS_QUESTIONS, write_near_misses

    return [
        ("documents tests' set (12 files, 20 questions)", write_corpus, QUESTIONS),
        ("near misses (18 files, 18 questions)", write_near_misses, NEAR_MISS_QUESTIONS),
    ]


def quality(retriever, questions) -> tuple[float, float]:
    """recall@3 and MRR (the answer's file over the first 30 passages)."""
    hits, reciprocal = 0, 0.0
    for question, expected in questions:
        names = [p.name for p in retriever.search(question, 30)]
        hits += expected in names[:3]
        reciprocal += 1 / (names.index(expected) + 1) if expected in names else 0.0
    return hits / len(questions), reciprocal / len(questions)


def document_search(args, work: Path) -> list[str]:
    from localllm.app.documents.index import DocumentIndex
    from localllm.app.documents.indexer import Indexer
    from localllm.app.documents.reranker import DaemonReranker
    from localllm.app.documents.retrieval import Retriever
    from localllm.daemon.client import Client

    url, model, process = args.url, args.reranker, None
    if url is None:
        from tests.support.model_writers.reranker import write_tiny_reranker

        generated = write_tiny_reranker(work / "documents-reranker.gguf")  # random: any size
        process, url = start_ours(work / "documents", generated, args.threads, 512)
        model = "bench"
    lines = ["| set | search | recall@3 | MRR |", "| --- | --- | --- | --- |"]
    try:
        with Client(url, timeout=600) as client:
            reranker = DaemonReranker.over_client(client, model)
            for label, write, questions in labelled_sets():
                index = DocumentIndex(work / f"{write.__name__}.sqlite3")
                for _ in Indexer(index).run([write(work / write.__name__)]):
                    pass
                for how, retriever in (
                    ("words (BM25)", Retriever(index)),
                    (f"words, then reranked by {model}", Retriever(index, reranker=reranker)),
                ):
                    recall, mrr = quality(retriever, questions)
                    lines.append(f"| {label} | {how} | {recall:.2f} | {mrr:.2f} |")
                index.close()
    finally:
        if process is not None:
            stop(process)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--documents", type=int, default=16)
    parser.add_argument("--reranker", help="an installed reranker for the document search")
    parser.add_argument("--url", help="the daemon that has --reranker installed")
    args = parser.parse_args()
    if (args.reranker is None) != (args.url is None):
        parser.error("--reranker and --url go together")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        print("## Against llama-server --rerank\n")
        print("\n".join(against_llama_server(args, work)))
        print("\n## Document search\n")
        print("\n".join(document_search(args, work)))


if __name__ == "__main__":
    main()
