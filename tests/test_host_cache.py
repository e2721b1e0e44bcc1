"""The host-RAM prompt cache: a conversation that lost its slot to others gets its history back
from RAM instead of decoding it again, with the same greedy output; the cache keeps to its byte
bound (least recently used first) and never restores a state that does not fit."""

from __future__ import annotations

import ctypes
import random
import string
from dataclasses import replace

import pytest

from localllm.daemon.runners.types import DoneEvent
from tests.support.runner import collect, make_spec, write_tiny_model

SLOTS = 4


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(n))


def _turn(history: str, question: str) -> str:
    return f"{history}<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def _cached(done: DoneEvent) -> int:
    return done.prompt_tokens - done.prompt_evaluated


def _interleave(harness, runner, conversations: int = SLOTS + 1):
    """First turns of every conversation, then their second turns; the 5th's turns back."""
    histories = [f"<|im_start|>system\n{_words(80, seed)}<|im_end|>\n" for seed in range(5)]
    first = []
    for i in range(conversations):
        prompt = _turn(histories[i], f"question one of {i}")
        reply = harness.run(collect(runner, prompt))
        first.append(reply)
        histories[i] = prompt + reply.text + "<|im_end|>\n"
    second = []
    for i in range(conversations):
        second.append(harness.run(collect(runner, _turn(histories[i], f"question two of {i}"))))
    return first[-1], second[-1], _turn(histories[-1], f"question two of {conversations - 1}")


def test_a_conversation_evicted_from_its_slot_is_restored_from_host_ram(harness, tiny_model_path):
    spec = make_spec(tiny_model_path, num_ctx=1024, num_parallel=SLOTS)
    warm = harness.start(replace(spec, host_cache_bytes=64 << 20))
    first, second, prompt = _interleave(harness, warm)
    assert _cached(second.done) >= first.done.prompt_tokens
    status = harness.run(warm.status())
    assert status["host_cache"]["entries"] >= 1

    without = harness.start(spec)  # host cache off: the same turns decode the history again
    _, lost, _ = _interleave(harness, without)
    assert _cached(lost.done) < first.done.prompt_tokens

    cold = harness.start(spec)
    alone = harness.run(collect(cold, prompt))
    assert alone.done.prompt_evaluated == alone.done.prompt_tokens
    assert second.token_ids == alone.token_ids == lost.token_ids
    assert second.text == alone.text


def test_an_idle_runner_has_copied_its_finished_conversation_already(harness, tiny_model_path):
    """Copied while nothing runs, so the next prompt to take the slot does not wait for it."""
    spec = make_spec(tiny_model_path, num_ctx=1024, num_parallel=SLOTS)
    prompt = _turn(f"<|im_start|>system\n{_words(80, 9)}<|im_end|>\n", "hello")
    for limit, entries in ((64 << 20, 1), (0, 0)):
        runner = harness.start(replace(spec, host_cache_bytes=limit))
        harness.run(collect(runner, prompt))
        assert harness.run(runner.status())["host_cache"]["entries"] == entries


# -- the cache itself, on a real llama.cpp context in this process ---------------------------


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from localllm.daemon.runners.worker.model import ContextConfig, Model

    path = write_tiny_model(tmp_path_factory.mktemp("host") / "m.gguf", n_head=2, seed=3)
    model = Model.load(make_spec(path, num_ctx=256, num_parallel=2))
    contexts = []

    def context(kv_cache_type: str = "f16"):
        model.spec = make_spec(path, kv_cache_type=kv_cache_type, flash_attention="on")
        ctx = model.new_context(ContextConfig(512, 2, 128, 1))
        contexts.append(ctx)
        return ctx

    yield model, context
    import llama_cpp as lc

    for ctx in contexts:
        lc.llama_free(ctx)
    model.close()


def _host_cache(ctx, limit_bytes: int):
    """A host cache over ``ctx`` (the generated model has no sliding window), with no disk
    behind it (``tests/test_disk_cache.py``)."""
    import llama_cpp as lc

    from localllm.daemon.runners.worker.disk_cache import DiskCache
    from localllm.daemon.runners.worker.host_cache import HostCache
    from localllm.daemon.runners.worker.window import SlidingWindow

    memory = lc.llama_get_memory(ctx)
    window = SlidingWindow(ctx, memory, 0, 128, limit_bytes)
    return HostCache(ctx, memory, limit_bytes, window, DiskCache(ctx, memory, window, None, 128))


def _fill(ctx, slot, tokens: list[int]) -> None:
    """Decode ``tokens`` into ``slot``'s sequence, as the engine does."""
    from localllm.daemon.runners.worker.batch import Batch

    batch = Batch(len(tokens))
    batch.extend(tokens, 0, slot.seq_id, True)
    assert batch.decode(ctx) == 0
    slot.cached[:] = tokens


def _tokens(n: int, seed: int, n_vocab: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(5, n_vocab) for _ in range(n)]


def _logits(ctx, n_vocab: int) -> list[float]:
    import llama_cpp as lc

    return lc.llama_get_logits_ith(ctx, -1)[:n_vocab]


def test_the_cache_keeps_to_its_bound_and_drops_the_least_recently_used(llama):
    import llama_cpp as lc

    from localllm.daemon.runners.worker.slots import Slot

    model, context = llama
    ctx = context()
    memory = lc.llama_get_memory(ctx)
    prompts = [_tokens(100, seed, model.n_vocab) for seed in range(3)]
    slot = Slot(0)
    _fill(ctx, slot, prompts[0])
    one = lc.llama_state_seq_get_size(ctx, 0)
    cache = _host_cache(ctx, 2 * one + one // 2)  # room for two states
    for prompt in prompts:
        lc.llama_memory_seq_rm(memory, 0, -1, -1)
        _fill(ctx, slot, prompt)
        assert cache.save(slot)
        assert cache.bytes <= cache.limit_bytes
    assert len(cache) == 2
    free = Slot(1)
    held = cache.pick([free], [*prompts[0], 5], set()).shared
    assert held == 0 and cache.restored == 0  # the oldest was dropped
    held = cache.pick([free], [*prompts[1], 5], set()).shared
    assert held == len(prompts[1]) and free.cached == prompts[1] and cache.restored == 1
    assert len(cache) == 1  # the restored state moved into the slot


def test_a_restored_state_gives_the_same_logits_and_a_bad_one_is_never_restored(llama):
    import llama_cpp as lc

    from localllm.daemon.runners.worker.slots import Slot

    model, context = llama
    ctx = context()
    memory = lc.llama_get_memory(ctx)
    prompt = _tokens(64, 9, model.n_vocab)
    slot = Slot(0)
    _fill(ctx, slot, prompt)
    expected = _logits(ctx, model.n_vocab)
    cache = _host_cache(ctx, 64 << 20)
    assert cache.save(slot)

    other = context("q8_0")  # another context (KV cache q8_0): the state does not fit it
    stranger = _host_cache(other, 64 << 20)
    stranger._entries.update(cache._entries)
    stranger.bytes = cache.bytes
    target = Slot(1)
    held = stranger.pick([target], [*prompt, 7], set()).shared
    assert held == 0 and target.cached == [] and stranger.restored == 0
    assert lc.llama_memory_seq_pos_max(lc.llama_get_memory(other), 1) == -1  # nothing loaded

    entry = next(iter(cache._entries.values()))
    broken = (ctypes.c_uint8 * (entry.size // 2))()
    ctypes.memmove(broken, entry.state, entry.size // 2)  # a truncated state
    corrupt = _host_cache(ctx, 64 << 20)
    corrupt._entries[tuple(prompt)] = replace(entry, state=broken, size=entry.size // 2)
    corrupt.bytes = entry.size // 2
    held = corrupt.pick([target], [*prompt, 7], set()).shared
    assert held == 0 and target.cached == []
    assert lc.llama_memory_seq_pos_max(memory, 1) == -1

    held = cache.pick([target], [*prompt, 7], set()).shared
    assert held == len(prompt) and target.cached == prompt
    from localllm.daemon.runners.worker.batch import Batch

    batch = Batch(1)
    batch.add(prompt[-1], len(prompt) - 1, 1, True)  # the engine decodes the last one again
    lc.llama_memory_seq_rm(memory, 1, len(prompt) - 1, -1)
    assert batch.decode(ctx) == 0
    assert _logits(ctx, model.n_vocab) == pytest.approx(expected, abs=1e-3)


def test_a_full_cache_restores_what_the_slot_asks_while_saving_what_it_held(llama):
    """Saving the slot's own state may evict to make room: never the state being restored."""
    import llama_cpp as lc

    from localllm.daemon.runners.worker.slots import Slot

    model, context = llama
    ctx = context()
    memory = lc.llama_get_memory(ctx)
    wanted, held = _tokens(80, 21, model.n_vocab), _tokens(80, 22, model.n_vocab)
    slot = Slot(0)
    _fill(ctx, slot, wanted)
    one = lc.llama_state_seq_get_size(ctx, 0)
    cache = _host_cache(ctx, one + one // 2)  # room for one state only
    assert cache.save(slot)
    lc.llama_memory_seq_rm(memory, 0, -1, -1)
    _fill(ctx, slot, held)
    kept = cache.pick([slot], [*wanted, 5], set()).shared
    assert kept == len(wanted) and slot.cached == wanted and cache.restored == 1
    assert len(cache) == 1 and cache.bytes <= cache.limit_bytes  # what the slot held, saved
    kept = cache.pick([Slot(1)], [*held, 5], set()).shared
    assert kept == len(held)
