"""The host-RAM prompt cache through the daemon, as an OpenAI client sees it: five chats on a
model with four slots; the 5th chat's second turn reports its history as cached tokens when
the cache is on (the default), and not when ``LOCALLLM_HOST_CACHE_MB`` is 0."""

from __future__ import annotations

import random
import string

import openai
import pytest

from tests.support.daemon import Daemon, make_store


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(n))


def _fifth_chat(url: str) -> tuple[int, int]:
    """(the 5th chat's first-turn prompt tokens, its second turn's cached tokens)."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    chats = [[{"role": "system", "content": _words(80, seed)}] for seed in range(5)]

    def turn(messages: list[dict], question: str):
        messages.append({"role": "user", "content": question})
        reply = client.chat.completions.create(
            model="tiny", messages=messages, max_tokens=8, temperature=0, seed=1
        )
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply

    first = [turn(chat, "first question") for chat in chats]
    second = [turn(chat, "second question") for chat in chats]
    cached = second[-1].usage.prompt_tokens_details.cached_tokens
    return first[-1].usage.prompt_tokens, cached


@pytest.fixture(scope="module")
def store(tmp_path_factory, tiny_model_path):
    return make_store(tmp_path_factory.mktemp("host-api") / "store", {"tiny": tiny_model_path})


@pytest.mark.parametrize("cache_mb", ["", "0"])
def test_the_fifth_chat_keeps_its_history_only_with_the_host_cache(store, tmp_path, cache_mb):
    env = {"LOCALLLM_NUM_PARALLEL": "4", "LOCALLLM_HOST_CACHE_MB": cache_mb}
    with Daemon(store, tmp_path / "logs", env=env) as daemon:
        prompt_tokens, cached = _fifth_chat(daemon.url)
    if cache_mb == "0":
        assert cached < prompt_tokens  # the history was decoded again
    else:
        assert cached >= prompt_tokens
