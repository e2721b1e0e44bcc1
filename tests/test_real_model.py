"""The real-model tier: Gemma 3 270M (a base model: no chat template, a 262k vocabulary,
sliding-window attention) through the real daemon. The rest of the suite uses generated models."""

from __future__ import annotations

import math

import httpx
import pytest

from tests.support.daemon import Daemon, make_store
from tests.support.real_model import gemma_path

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0, "seed": 1, "num_predict": 32}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("gemma")
    store = make_store(root / "models", {"gemma": gemma_path()})
    with Daemon(store, root / "logs") as running:
        yield running


def complete(daemon: Daemon, prompt: str, **options) -> dict:
    body = {"model": "gemma", "prompt": prompt, "raw": True, "stream": False}
    options = GREEDY | options
    answer = httpx.post(daemon.url + "/api/generate", json=body | {"options": options}, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


def cosine(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def test_show_reads_the_real_metadata(daemon):
    shown = httpx.post(daemon.url + "/api/show", json={"model": "gemma"}, timeout=30).json()
    assert shown["details"]["family"] == "gemma3"
    assert shown["details"]["quantization_level"] == "Q4_K_M"
    assert shown["model_info"]["gemma3.context_length"] == 32768
    assert shown["model_info"]["general.architecture"] == "gemma3"
    # 256 values per head (not 640 / 4): a client's KV-cache estimate needs them
    assert shown["model_info"]["gemma3.attention.key_length"] == 256
    assert shown["model_info"]["gemma3.attention.value_length"] == 256


def test_greedy_completion_is_the_models_own(daemon):
    reply = complete(daemon, "def fibonacci(n):\n")
    assert reply["response"].startswith("    if n == 0:\n        return 0\n")
    assert reply["done_reason"] == "length"


def test_a_stop_string_ends_the_answer_before_it(daemon):
    reply = complete(daemon, "The capital of France is", stop=["."])
    assert reply["done_reason"] == "stop"
    assert reply["response"] == " the capital of the country"


def test_a_longer_prompt_reuses_the_cached_one_past_the_sliding_window(daemon):
    story = "Once upon a time, in a land far away, there lived a king who loved stories. " * 30
    client = daemon.openai(timeout=120)
    first = client.completions.create(model="gemma", prompt=story, max_tokens=4, temperature=0)
    assert first.usage.prompt_tokens > 512  # longer than Gemma 3's 512-token window
    longer = story + "One day the king"
    second = client.completions.create(model="gemma", prompt=longer, max_tokens=4, temperature=0)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= first.usage.prompt_tokens - 1  # only the new words were decoded


def test_a_new_chat_with_the_same_system_prompt_resumes_where_it_ends(daemon):
    """The daemon says where the system prompt ends; the runner keeps a checkpoint of Gemma's
    window cache there, which a new chat with that system prompt resumes from though the
    first chat's window has moved far past it."""
    rules = " ".join(f"Rule {i}: answer question {i} in {i % 7 + 1} words." for i in range(90))
    client = daemon.openai(timeout=180)

    def chat(question: str):
        messages = [{"role": "system", "content": rules}, {"role": "user", "content": question}]
        return client.chat.completions.create(
            model="gemma", messages=messages, max_tokens=4, temperature=0
        )

    story = "Once upon a time, in a land far away, there lived a king who loved stories. "
    first = chat("Sum this up: " + story * 40)
    second = chat("What is rule 3?")
    # the first chat's window cache (512 tokens and a batch) lies past the system prompt
    assert first.usage.prompt_tokens - second.usage.prompt_tokens > 600
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= second.usage.prompt_tokens - 32  # only the question (and its turn) was read


def test_embeddings_are_normalized_and_tell_texts_apart(daemon):
    body = {"model": "gemma", "input": ["a cat sat on the mat", "a cat sat on the mat", "stocks"]}
    answer = httpx.post(daemon.url + "/api/embed", json=body, timeout=60).json()
    same, again, other = answer["embeddings"]
    assert len(same) == 640  # Gemma 3 270M's embedding width
    assert math.isclose(math.fsum(x * x for x in same), 1.0, rel_tol=1e-3)
    assert cosine(same, again) > 0.9999  # one text, one meaning (batch position aside)
    assert cosine(same, other) < 0.99
