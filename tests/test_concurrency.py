"""Many clients at once against a real daemon and runner: independent complete answers,
seeds that mean the same thing at any concurrency, hung-up clients that free their slot, a
runner killed mid-stream, and a full queue."""

from __future__ import annotations

import json
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from tests.support.daemon import Daemon, make_store, metric_value
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

PROMPT = [{"role": "user", "content": "Write something."}]


@pytest.fixture(scope="module")
def store(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("concurrency")
    return make_store(root / "store", {"tiny": tiny_model_path}), root


@pytest.fixture(scope="module")
def daemon(store):
    store_dir, root = store
    with Daemon(store_dir, root / "logs", {"LOCALLLM_NUM_PARALLEL": "4"}) as running:
        yield running


def stream_text(client, seed: int, max_tokens: int = 24) -> tuple[str, str, int]:
    chunks = client.chat.completions.create(
        model="tiny",
        messages=PROMPT,
        max_tokens=max_tokens,
        seed=seed,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, used = "", None, 0
    for chunk in chunks:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            used = chunk.usage.completion_tokens
    return text, finish, used


def open_stream(daemon: Daemon, max_tokens: int = 1500) -> tuple[httpx.Client, httpx.Response]:
    """A raw streaming request, left open for the test to read from or hang up on."""
    http = httpx.Client(timeout=30)
    body = {"model": "tiny", "messages": PROMPT, "max_tokens": max_tokens, "stream": True}
    response = http.send(
        http.build_request("POST", daemon.url + "/v1/chat/completions", json=body), stream=True
    )
    return http, response


def test_eight_streams_at_once_are_complete_and_independent(daemon):
    client = daemon.openai()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda seed: stream_text(client, seed), range(8)))
    for text, finish, used in results:
        assert finish == "length" and used == 24 and text
    assert len({text for text, _, _ in results}) == 8  # different seeds, different answers


def test_the_same_seed_gives_the_same_text_at_any_concurrency(daemon):
    client = daemon.openai()
    alone = stream_text(client, seed=42)[0]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda _: stream_text(client, seed=42)[0], range(8)))
    assert together == [alone] * 8


def test_a_client_that_hangs_up_frees_its_slot(daemon):
    def cancelled() -> float:
        return metric_value(
            daemon.metrics(), "localllm_generations_total", model="tiny", reason="cancelled"
        )

    before = cancelled()
    http, response = open_stream(daemon)
    lines = response.iter_lines()
    assert next(lines).startswith("data: ")
    next(lines)
    response.close()
    http.close()
    assert wait_for(lambda: cancelled() == before + 1)
    assert wait_for(
        lambda: metric_value(daemon.metrics(), "localllm_slots_busy", model="tiny") == 0
    )
    text, finish, _ = stream_text(daemon.openai(), seed=1, max_tokens=8)
    assert finish == "length" and text


def test_a_runner_killed_mid_stream_fails_its_streams_cleanly_and_the_next_request_works(daemon):
    streams = [open_stream(daemon) for _ in range(2)]
    readers = []
    for _, response in streams:
        assert response.status_code == 200
        readers.append(response.iter_lines())
        next(readers[-1])
    (runner,) = daemon.runner_pids()
    os.kill(runner, signal.SIGKILL)
    errors = []

    def drain(lines) -> None:
        for line in lines:
            if line.startswith("data: {") and '"error"' in line:
                errors.append(json.loads(line[6:])["error"])

    threads = [threading.Thread(target=drain, args=(lines,)) for lines in readers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=15)
        assert not thread.is_alive(), "a stream hung after its runner died"
    assert len(errors) == 2
    assert all(e["code"] == "runner_crashed" and "tiny" in e["message"] for e in errors)
    for http, response in streams:
        response.close()
        http.close()
    text, finish, _ = stream_text(daemon.openai(), seed=3, max_tokens=8)
    assert finish == "length" and text
    assert daemon.runner_pids() and runner not in daemon.runner_pids()


def test_a_full_queue_answers_503_at_once(store):
    store_dir, root = store
    env = {"LOCALLLM_MAX_QUEUE": "2", "LOCALLLM_NUM_PARALLEL": "1"}
    with Daemon(store_dir, root / "logs-queue", env) as small:
        with ThreadPoolExecutor(2) as pool:  # one generating, one waiting for the slot
            held = [pool.submit(open_stream, small, 2000) for _ in range(2)]
            assert wait_for(
                lambda: metric_value(small.metrics(), "localllm_slots_busy", model="tiny") == 1
            )
            assert metric_value(small.metrics(), "localllm_requests_in_flight") == 2
            assert metric_value(small.metrics(), "localllm_queue_depth") == 1
            with pytest.raises(openai.APIStatusError) as caught:
                small.openai().chat.completions.create(model="tiny", messages=PROMPT, max_tokens=2)
            assert caught.value.status_code == 503
            assert "server busy" in caught.value.message
            # At once: refused while both still hold their places, not once one was free.
            assert metric_value(small.metrics(), "localllm_slots_busy", model="tiny") == 1
            assert metric_value(small.metrics(), "localllm_queue_depth") == 1
            for future in held:
                http, response = future.result()
                response.close()
                http.close()
        assert wait_for(lambda: metric_value(small.metrics(), "localllm_requests_in_flight") == 0)
