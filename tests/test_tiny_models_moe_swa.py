"""The generated models that are not plain llama: a mixture of experts, a Gemma-3-like model
with sliding windows, and Gemma's 262k vocabulary; each written, then run by the real runner,
whose llama.cpp log says what it loaded."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

import gguf
import pytest

from localllm.daemon.inference.templates import ChatTemplate, TemplateRejectedError
from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.tiny_vocabulary import tiny_vocabulary
from tests.support.model_writers.gemma3 import GEMMA_TEMPLATE, gemma3_vocabulary, write_tiny_gemma3
from tests.support.polling import wait_for
from tests.support.runner import GREEDY, collect, make_spec, write_tiny_model

GEMMA_LAYER = (
    "attn_norm",
    "attn_q",
    "attn_q_norm",
    "attn_k",
    "attn_k_norm",
    "attn_v",
    "attn_output",
    "post_attention_norm",
    "ffn_norm",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
    "post_ffw_norm",
)


def tensors(path: Path) -> dict[str, tuple[list[int], str]]:
    """Each tensor's shape as llama.cpp states it (fastest dimension first) and its type."""
    return {
        t.name: ([int(n) for n in t.shape], t.tensor_type.name)
        for t in gguf.GGUFReader(path).tensors
    }


def is_plain_text(text: str) -> bool:
    return all(char == "\n" or (char.isascii() and char.isprintable()) for char in text)


# --- the files ---------------------------------------------------------------------------------


def test_gemma3_same_arguments_give_the_same_bytes(tmp_path):
    a = write_tiny_gemma3(tmp_path / "a.gguf", seed=7)
    b = write_tiny_gemma3(tmp_path / "b.gguf", seed=7)
    c = write_tiny_gemma3(tmp_path / "c.gguf", seed=8)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert a.stat().st_size < 1 << 20


def test_gemma3_has_gemmas_keys_and_vocabulary(tmp_path):
    info = read_gguf_info(write_tiny_gemma3(tmp_path / "g.gguf"))
    meta = info.metadata
    assert info.architecture == "gemma3" and info.context_length == 32768
    assert meta["gemma3.attention.sliding_window"] == 512
    assert "gemma3.attention.sliding_window_pattern" not in meta  # llama.cpp's default: 6
    assert (meta["gemma3.attention.key_length"], meta["gemma3.attention.value_length"]) == (32, 32)
    assert (meta["gemma3.attention.head_count"], meta["gemma3.attention.head_count_kv"]) == (4, 1)
    assert meta["tokenizer.ggml.add_space_prefix"] is False
    assert info.chat_template == GEMMA_TEMPLATE
    vocab = gemma3_vocabulary()
    assert vocab.tokens[meta["tokenizer.ggml.eos_token_id"]] == "<end_of_turn>"
    assert "<start_of_turn>" in vocab.tokens
    assert vocab.tokens[: vocab.newline_id + 1] == tiny_vocabulary().tokens[: vocab.newline_id + 1]
    padded = write_tiny_gemma3(tmp_path / "v.gguf", vocab_size=1000)
    assert read_gguf_info(padded).vocab_size == 1000


@pytest.mark.parametrize("tied", [True, False])
def test_gemma3_tensors_are_gemmas(tmp_path, tied):
    """Per layer q/k norms and post-norms, heads wider than n_embd / n_head, and the output
    tied to the embeddings unless asked otherwise."""
    path = write_tiny_gemma3(tmp_path / "g.gguf", n_layer=2, file_type="Q8_0", tied_embeddings=tied)
    found = tensors(path)
    assert {name for name in found if name.startswith("blk.1.")} == {
        f"blk.1.{part}.weight" for part in GEMMA_LAYER
    }
    assert found["blk.1.attn_q.weight"] == ([64, 128], "Q8_0")  # 4 heads of 32
    assert found["blk.1.attn_k.weight"] == ([64, 32], "Q8_0")  # 1 key/value head
    assert found["blk.1.attn_output.weight"] == ([128, 64], "Q8_0")
    assert found["blk.1.attn_q_norm.weight"] == ([32], "F32")
    assert found["token_embd.weight"] == ([64, 433], "Q8_0")
    assert ("output.weight" in found) is not tied


@pytest.mark.parametrize(
    ("pattern", "value"),
    [(2, 2), ([True, False, True, True], [True, False, True, True])],
)
def test_gemma3_writes_a_sliding_window_pattern_when_asked(tmp_path, pattern, value):
    path = write_tiny_gemma3(tmp_path / "g.gguf", n_layer=4, sliding_window_pattern=pattern)
    assert read_gguf_info(path).metadata["gemma3.attention.sliding_window_pattern"] == value
    none = read_gguf_info(write_tiny_gemma3(tmp_path / "n.gguf", sliding_window=0)).metadata
    assert "gemma3.attention.sliding_window" not in none


@pytest.mark.parametrize(
    "kwargs",
    [
        {"file_type": "Q5_0"},
        {"file_type": "Q8_0", "n_embd": 48},
        {"file_type": "Q4_0", "n_ff": 100},
        {"file_type": "Q8_0", "n_head": 3, "n_head_kv": 1, "head_dim": 10},
        {"head_dim": 15},
        {"n_head": 4, "n_head_kv": 3},
        {"n_layer": 0},
        {"sliding_window": -1},
        {"n_layer": 3, "sliding_window_pattern": [True, False]},
        {"vocab_size": 100},
    ],
)
def test_gemma3_bad_configurations_are_refused(tmp_path, kwargs):
    with pytest.raises(ValueError):
        write_tiny_gemma3(tmp_path / "g.gguf", **kwargs)


def test_gemma_template_folds_the_system_prompt_and_calls_the_assistant_model():
    template = ChatTemplate(GEMMA_TEMPLATE)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": " Hello. "},
        {"role": "user", "content": "Bye"},
    ]
    assert template.render(messages, bos_token="<s>") == (
        "<s><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello.<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"
    )
    with pytest.raises(TemplateRejectedError, match="alternate"):
        template.render([{"role": "assistant", "content": "Hi"}])


# --- run by the real runner --------------------------------------------------------------------


def start_logged(harness, path: Path, log: Path, **spec):
    """A runner on ``path`` whose llama.cpp info lines (the load's report) go to ``log``."""
    return harness.start(make_spec(path, **spec), log_path=log, verbose=True)


def logged(harness, log: Path, pattern: str) -> list[re.Match]:
    """Every match of ``pattern`` in the runner's log once one is there (the log is pumped on
    the harness's loop, so the wait runs beside it)."""

    def matches() -> list[re.Match]:
        return list(re.finditer(pattern, log.read_text(), re.MULTILINE)) if log.exists() else []

    assert harness.run(asyncio.to_thread(wait_for, matches)), f"no {pattern!r} in the log"
    return matches()


def greedy_twice(harness, runner, prompt: str, max_tokens: int = 24) -> str:
    params = replace(GREEDY, max_tokens=max_tokens)
    first, second = (harness.run(collect(runner, prompt, params)) for _ in range(2))
    assert first.done.completion_tokens == max_tokens
    assert first.token_ids == second.token_ids and first.text == second.text
    assert is_plain_text(first.text)
    return first.text


def test_moe_runs_with_its_experts(harness, tmp_path):
    path = write_tiny_model(tmp_path / "moe.gguf", n_expert=8, n_expert_used=2, file_type="Q8_0")
    runner = start_logged(harness, path, tmp_path / "moe.log")
    assert [m[1] for m in logged(harness, tmp_path / "moe.log", r"n_expert\s+= (\d+)")] == ["8"]
    assert logged(harness, tmp_path / "moe.log", r"n_expert_used\s+= (\d+)")[0][1] == "2"
    assert greedy_twice(harness, runner, "Hello world")


def test_gemma3_runs_its_sliding_window_layers_past_the_window(harness, tmp_path):
    """llama.cpp's default gemma3 pattern (layer 5 of 6 full, the others windowed) and a
    window cache of its own; greedy text the same twice, well past the 32-token window, the
    second time from the slot's cached prefix."""
    path = write_tiny_gemma3(tmp_path / "g.gguf", sliding_window=32, file_type="Q8_0")
    log = tmp_path / "g.log"
    runner = start_logged(harness, path, log)
    assert logged(harness, log, r"creating\s+SWA KV cache")
    layers = logged(harness, log, r"layer\s+(\d+) assigned to device \w+, is_swa = (\d)")
    assert {int(m[1]) for m in layers if m[2] == "1"} == {0, 1, 2, 3, 4}
    assert {int(m[1]) for m in layers if m[2] == "0"} >= {5}
    chat = ChatTemplate(GEMMA_TEMPLATE).render(
        [{"role": "user", "content": "Say hello to the world in a few words"}], bos_token="<s>"
    )
    assert greedy_twice(harness, runner, chat, max_tokens=48)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_a_262k_vocabulary_loads_and_generates(harness, tmp_path, family):
    writer = write_tiny_model if family == "llama" else write_tiny_gemma3
    path = writer(tmp_path / "big.gguf", vocab_size=262144, file_type="Q4_0")
    runner = start_logged(harness, path, tmp_path / "big.log")
    assert runner.info.n_vocab == 262144
    assert logged(harness, tmp_path / "big.log", r"n_vocab\s+= 262144")
    assert greedy_twice(harness, runner, "Hello world", max_tokens=8)
    harness.run(runner.stop())
