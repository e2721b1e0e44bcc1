"""A model's shape from its GGUF header alone: every tensor's bytes by layer and kind, and the
numbers llama.cpp sizes its caches from (heads, head sizes, widths, experts, the sliding
window and which layers use it), for generated llama, MoE and Gemma-3-like files."""

from __future__ import annotations

import struct
import tracemalloc

import gguf
import pytest

from localllm.model_registry import gguf_header
from localllm.model_registry.gguf_header import parse_header
from localllm.model_registry.model_shape import model_shape, read_model_shape
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.model_writers.gemma3 import write_tiny_gemma3
from tests.support.model_writers.lora import write_tiny_lora
from tests.support.model_writers.projector import write_tiny_projector
from tests.support.runner import split_gguf


def tensor_bytes(path, match=lambda name: True) -> int:
    return sum(int(t.n_bytes) for t in gguf.GGUFReader(path).tensors if match(t.name))


def test_a_dense_llama_by_layer_and_kind(tmp_path):
    path = write_tiny_model(tmp_path / "m.gguf", n_layer=3, n_head=4, n_head_kv=2, seed=1)
    shape = read_model_shape(path)
    assert (shape.architecture, shape.n_layer, shape.n_embd, shape.n_vocab) == ("llama", 3, 64, 431)
    assert shape.n_head == (4, 4, 4) and shape.n_head_kv == (2, 2, 2)
    assert (shape.head_k, shape.head_v) == (16, 16)  # n_embd / n_head: no key_length written
    assert shape.kv_widths(0) == (32, 32) and shape.n_ff == (192, 192, 192)
    assert not shape.sliding_window and not shape.tied_output and shape.kv_cache
    assert shape.weights_bytes == tensor_bytes(path)  # every tensor, to the byte
    assert shape.bytes_of("embeddings") == tensor_bytes(path, lambda n: n == "token_embd.weight")
    assert shape.bytes_of("output") == tensor_bytes(path, lambda n: n.startswith("output"))
    attention = tensor_bytes(path, lambda n: n.startswith("blk.1.attn_") and "norm" not in n)
    assert shape.bytes_of("attention", layer=1) == attention
    assert shape.bytes_of("ffn", layer=2) == tensor_bytes(
        path, lambda n: ".2.ffn_" in n and "norm" not in n
    )
    assert sum(shape.layer_bytes()) + shape.bytes_of("embeddings", "output") == shape.weights_bytes


def test_a_mixture_of_experts_keeps_its_experts_apart(tmp_path):
    path = write_tiny_model(tmp_path / "moe.gguf", n_expert=4, n_expert_used=2, seed=2)
    shape = read_model_shape(path)
    assert (shape.n_expert, shape.n_expert_used, shape.n_ff_expert) == (4, 2, 192)
    assert shape.bytes_of("experts") == tensor_bytes(path, lambda n: "_exps" in n)
    assert shape.bytes_of("ffn") == 0  # no dense FFN: the router is "other"
    router = tensor_bytes(path, lambda n: "ffn_gate_inp" in n)
    assert shape.bytes_of("other") >= router > 0


def test_gemma3s_window_layers_follow_llama_cpps_rule(tmp_path):
    """Every sixth layer sees the whole context (none given); a period or per-layer flags
    when the file says so; no window key, no window."""
    default = read_model_shape(write_tiny_gemma3(tmp_path / "a.gguf", n_layer=12))
    assert default.sliding_window == 512
    assert [i for i in range(12) if not default.is_swa(i)] == [5, 11]
    assert (default.head_k, default.head_v) == (32, 32)  # attention.key_length, not 64 / 4
    assert default.tied_output and default.kv_widths(0) == (32, 32)
    period = read_model_shape(
        write_tiny_gemma3(tmp_path / "b.gguf", n_layer=6, sliding_window_pattern=3)
    )
    assert period.swa_layers == (True, True, False, True, True, False)
    flags = (False, True, True, False, True, True)
    listed = read_model_shape(
        write_tiny_gemma3(tmp_path / "c.gguf", n_layer=6, sliding_window_pattern=flags)
    )
    assert listed.swa_layers == flags
    none = read_model_shape(write_tiny_gemma3(tmp_path / "d.gguf", sliding_window=0))
    assert not none.sliding_window and not any(none.is_swa(i) for i in range(none.n_layer))


def test_a_262k_vocabulary(tmp_path):
    shape = read_model_shape(write_tiny_gemma3(tmp_path / "v.gguf", vocab_size=262_144))
    assert shape.n_vocab == 262_144
    assert shape.bytes_of("embeddings") == 262_144 * 64 * 2  # F16


def test_a_sharded_model_is_the_sum_of_its_shards(tmp_path):
    whole = write_tiny_model(tmp_path / "whole.gguf", n_layer=4, seed=3)
    shards = split_gguf(whole, tmp_path / "split.gguf", max_tensors=10)
    assert len(shards) > 1
    split = read_model_shape(shards)
    assert split.weights_bytes == read_model_shape(whole).weights_bytes
    assert split.layer_bytes() == read_model_shape(whole).layer_bytes()


def test_extras_have_their_weights_from_their_own_headers(tmp_path):
    base = write_tiny_model(tmp_path / "base.gguf", seed=4)
    lora = read_model_shape(write_tiny_lora(tmp_path / "lora.gguf", base))
    projector = read_model_shape(write_tiny_projector(tmp_path / "mmproj.gguf"))
    for extra, path in ((lora, tmp_path / "lora.gguf"), (projector, tmp_path / "mmproj.gguf")):
        assert extra.n_layer == 0 and extra.weights_bytes == tensor_bytes(path) > 0


def test_the_fingerprint_follows_the_tensors_not_the_name(tmp_path):
    one = read_model_shape(write_tiny_model(tmp_path / "a.gguf", name="one", seed=5))
    other_name = read_model_shape(write_tiny_model(tmp_path / "b.gguf", name="two", seed=5))
    wider = read_model_shape(write_tiny_model(tmp_path / "c.gguf", n_embd=128, seed=5))
    assert one.fingerprint == other_name.fingerprint != wider.fingerprint


def _many_tensors(count: int) -> bytes:
    """A header that lists ``count`` 8-float tensors, all reading the same 32 bytes."""

    def s(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    arch = s("general.architecture") + struct.pack("<I", gguf.GGUFValueType.STRING) + s("llama")
    infos = b"".join(
        s(f"t{i}") + struct.pack("<IQIQ", 1, 8, gguf.GGMLQuantizationType.F32, 0)
        for i in range(count)
    )
    body = b"GGUF" + struct.pack("<IQQ", 3, count, 1) + arch + infos
    return body + b"\0" * (-len(body) % 32) + b"\0" * 32


def _parse_peak(path):
    tracemalloc.start()
    try:
        with open(path, "rb") as stream:
            header = parse_header(stream, path.stat().st_size)
        return header, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow  # writes a huge tensor list
def test_the_tensor_list_is_bounded_and_the_rest_still_counted(tmp_path, monkeypatch):
    """A file may list up to a million tensors: past the cap they are summed, not kept, so a
    hostile header costs bounded memory and the plan still counts every byte."""
    path = tmp_path / "many.gguf"
    path.write_bytes(_many_tensors(20_000))
    monkeypatch.setattr(gguf_header, "_KEEP_TENSORS", 1_000_000)
    _, peak_all = _parse_peak(path)
    monkeypatch.setattr(gguf_header, "_KEEP_TENSORS", 1000)
    header, peak = _parse_peak(path)
    assert len(header.tensors) == 1000 and header.tensor_bytes == 20_000 * 32
    assert peak_all - peak > 2 << 20  # what listing the other 19,000 would have cost
    assert model_shape(header).weights_bytes == 20_000 * 32


@pytest.mark.parametrize("arch_keys", [{}, {"llama.block_count": "x"}])
def test_a_header_without_hyperparameters_still_has_weights(tmp_path, arch_keys):
    path = write_tiny_model(tmp_path / "m.gguf", seed=6)
    with open(path, "rb") as stream:
        header = parse_header(stream, path.stat().st_size)
    header.values.update(arch_keys)
    header.values.pop("llama.attention.head_count", None)
    shape = model_shape(header)
    assert shape.weights_bytes == tensor_bytes(path)
    assert shape.kv_widths(0) == (0, 0)  # no heads known: no cache planned, no crash
