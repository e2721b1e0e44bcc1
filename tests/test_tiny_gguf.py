"""The tiny model generator: deterministic files that real llama.cpp loads and runs."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import gguf
import pytest

from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.tiny_gguf import CHATML_TEMPLATE, TinyGGUFWriter, write_tiny_model
from localllm.model_registry.tiny_thinking import HARMONY_TEMPLATE, QWEN3_TEMPLATE, style_tokens
from localllm.model_registry.tiny_vocabulary import add_tokenizer, tiny_vocabulary
from tests.support.model_writers.lora import write_tiny_lora
from tests.support.model_writers.projector import write_tiny_projector

FILE_TYPES = ["F16", "Q8_0", "Q4_0"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_arguments_give_the_same_bytes(tmp_path):
    a = write_tiny_model(tmp_path / "a.gguf", seed=7)
    b = write_tiny_model(tmp_path / "b.gguf", seed=7)
    c = write_tiny_model(tmp_path / "c.gguf", seed=8)
    assert digest(a) == digest(b) != digest(c)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "92637b664b9fcfc88a282e63c03a6a47e67a22d5c72e6f4aa89af757fdf69c96"),
        (
            {
                "file_type": "Q4_0",
                "vocab_size": 1000,
                "n_layer": 3,
                "n_embd": 96,
                "n_head": 6,
                "n_head_kv": 2,
            },
            "f31cdcf1bad5ce3cef2ea808d5fe84a8b3bc2d61d6969c48da25df58fb80efe2",
        ),
        (
            {
                "file_type": "Q8_0",
                "thinking": "qwen3",
                "fill_in_middle": True,
                "end_of_turn": "soon",
            },
            "dfbb072378517d97a9b01dbc424108b1be251e6befe2239bd196a03f027df961",
        ),
    ],
)
def test_dense_models_keep_their_bytes(tmp_path, kwargs, expected):
    """Experts and the fast metadata packing changed nothing for a dense model: these digests
    are the generator's before them (benchmarks' and tests' models must not change by accident;
    a new gguf or numpy that changes them fails here first, on purpose)."""
    assert digest(write_tiny_model(tmp_path / "m.gguf", **kwargs)) == expected


def test_fast_packing_gives_ggufs_own_bytes(tmp_path):
    """The tiny writers' writer packs long metadata arrays whole, into the bytes gguf's own
    writer packs item by item."""
    vocab = tiny_vocabulary(5000, thinking="qwen3")
    files = []
    for name, kind in (("own.gguf", gguf.GGUFWriter), ("fast.gguf", TinyGGUFWriter)):
        writer = kind(None, "llama")
        add_tokenizer(writer, vocab, CHATML_TEMPLATE)
        writer.write_header_to_file(tmp_path / name)
        writer.write_kv_data_to_file()
        writer.close()
        files.append((tmp_path / name).read_bytes())
    assert files[0] == files[1]


@pytest.mark.slow  # writes a 262k vocabulary
def test_a_262k_vocabulary_packs_its_arrays_whole(tmp_path, monkeypatch):
    """Gemma's vocabulary size: its tokens, scores and types are packed in a few calls, not
    one per item (786,432 calls before), and the file says what it holds."""
    calls = 0
    item_by_item = gguf.GGUFWriter._pack_val

    def counted(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        return item_by_item(self, *args, **kwargs)

    monkeypatch.setattr(gguf.GGUFWriter, "_pack_val", counted)
    path = write_tiny_model(tmp_path / "big.gguf", vocab_size=262144, file_type="Q4_0")
    assert calls < 100
    info = read_gguf_info(path)
    assert (info.vocab_size, info.file_type) == (262144, "Q4_0")


def test_default_model_is_small(tmp_path):
    path = write_tiny_model(tmp_path / "m.gguf")
    assert path.stat().st_size < 1 << 20  # what keeps writing and loading it quick


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, {"vocab_size": 431, "block_count": 2, "embedding_length": 64, "file_type": "F16"}),
        ({"vocab_size": 1000, "file_type": "Q8_0"}, {"vocab_size": 1000, "file_type": "Q8_0"}),
        (
            {"n_layer": 3, "n_embd": 96, "n_head": 6, "n_head_kv": 2},
            {"block_count": 3, "embedding_length": 96, "head_count": 6, "head_count_kv": 2},
        ),
        (
            {"context_length": 512, "name": "x", "license": "MIT"},
            {"context_length": 512, "name": "x", "license": "MIT"},
        ),
        ({"chat_template": None}, {"chat_template": None}),
    ],
)
def test_configuration_shows_in_the_metadata(tmp_path, kwargs, expected):
    info = read_gguf_info(write_tiny_model(tmp_path / "m.gguf", **kwargs))
    assert {key: getattr(info, key) for key in expected} == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"file_type": "Q5_0"},
        {"file_type": "Q8_0", "n_embd": 48, "n_head": 4},
        {"file_type": "Q4_0", "n_ff": 100},
        {"file_type": "Q8_0", "n_ff": 100},
        {"n_embd": 64, "n_head": 5},
        {"n_head": 4, "n_head_kv": 3},
        {"n_layer": 0},
        {"vocab_size": 100},
        {"end_of_turn": "sometimes"},
        {"n_expert": 4, "n_expert_used": 5},
        {"n_expert": 4},
        {"n_expert_used": 2},
        {"n_expert": 1025, "n_expert_used": 2},
        {"n_expert": -1},
    ],
)
def test_bad_configurations_are_refused(tmp_path, kwargs):
    with pytest.raises(ValueError):
        write_tiny_model(tmp_path / "m.gguf", **kwargs)


def test_experts_replace_the_dense_feed_forward_network(tmp_path):
    """Mixtral's layout, as llama.cpp's llama architecture loads it: a router (kept F32) and
    the experts stacked along a third dimension, each of ``n_ff``."""
    path = write_tiny_model(tmp_path / "m.gguf", n_expert=4, n_expert_used=2, n_ff=96)
    info = read_gguf_info(path)
    assert info.metadata["llama.expert_count"] == 4
    assert info.metadata["llama.expert_used_count"] == 2
    tensors = {t.name: ([int(n) for n in t.shape], t.tensor_type.name) for t in info_tensors(path)}
    assert tensors["blk.1.ffn_gate_inp.weight"] == ([64, 4], "F32")
    assert tensors["blk.1.ffn_gate_exps.weight"] == ([64, 96, 4], "F16")
    assert tensors["blk.1.ffn_up_exps.weight"] == ([64, 96, 4], "F16")
    assert tensors["blk.1.ffn_down_exps.weight"] == ([96, 64, 4], "F16")
    assert not [name for name in tensors if re.search(r"ffn_(gate|up|down)\.weight", name)]


def info_tensors(path: Path) -> list:
    return list(gguf.GGUFReader(path).tensors)


def test_control_tokens_join_the_vocabulary_once():
    vocab = tiny_vocabulary(1000, control_tokens=("<start_of_turn>", "<end_of_turn>"))
    assert len(vocab.tokens) == 1000
    start = vocab.tokens.index("<start_of_turn>")
    assert vocab.tokens[:start] == tiny_vocabulary().tokens[:start]
    assert start in vocab.quiet_ids and vocab.types[start] == gguf.TokenType.CONTROL
    with pytest.raises(ValueError, match="control_tokens"):
        tiny_vocabulary(control_tokens=("<|im_end|>",))


def test_vocabulary_layout():
    vocab = tiny_vocabulary(2000)
    assert len(vocab.tokens) == len(vocab.scores) == len(vocab.types) == 2000
    assert len(set(vocab.tokens)) == 2000
    assert vocab.tokens[:3] == ["<unk>", "<s>", "</s>"]
    assert vocab.tokens[3] == "<0x00>" and vocab.tokens[258] == "<0xFF>"
    assert vocab.tokens[vocab.eos_id] == "<|im_end|>"
    assert vocab.tokens[vocab.im_start_id] == "<|im_start|>"
    assert vocab.tokens[vocab.newline_id] == "<0x0A>"
    assert vocab.newline_id not in vocab.quiet_ids and vocab.eos_id in vocab.quiet_ids
    for word in ("\u2581the", "\u2581Hello", "\u2581world"):
        assert word in vocab.tokens


@pytest.mark.parametrize(
    ("style", "markers", "kind"),
    [
        ("qwen3", ["<think>", "</think>"], gguf.TokenType.USER_DEFINED),
        ("gpt-oss", ["<|start|>", "<|end|>", "<|message|>", "<|channel|>"], gguf.TokenType.CONTROL),
    ],
)
def test_thinking_styles_add_their_markers_as_quiet_tokens(style, markers, kind):
    vocab = tiny_vocabulary(thinking=style)
    assert vocab.tokens[: vocab.eos_id + 1] == tiny_vocabulary().tokens[: vocab.eos_id + 1]
    for marker in markers:
        token = vocab.tokens.index(marker)
        assert vocab.types[token] == kind and token in vocab.quiet_ids
    with pytest.raises(ValueError, match="thinking"):
        tiny_vocabulary(thinking="o1")


def test_thinking_styles_bring_their_templates(tmp_path):
    def template(**kwargs):
        return read_gguf_info(write_tiny_model(tmp_path / "m.gguf", **kwargs)).chat_template

    assert template(thinking="qwen3") == QWEN3_TEMPLATE
    assert template(thinking="gpt-oss") == HARMONY_TEMPLATE
    assert template(thinking="qwen3", chat_template="{{ x }}") == "{{ x }}"
    assert template() == CHATML_TEMPLATE


def test_projector_is_a_readable_clip_file(tmp_path):
    info = read_gguf_info(write_tiny_projector(tmp_path / "p.gguf"))
    assert info.is_projector and info.architecture == "clip"


def test_lora_adapter_fits_its_base_model(tmp_path):
    base = write_tiny_model(tmp_path / "m.gguf", n_layer=3, n_embd=96, n_head=6, n_head_kv=2)
    a = write_tiny_lora(tmp_path / "a.gguf", base, rank=8)
    assert digest(a) == digest(write_tiny_lora(tmp_path / "b.gguf", base, rank=8))
    info = read_gguf_info(a)
    assert info.architecture == "llama" and not info.is_projector
    assert info.metadata["general.type"] == "adapter"
    assert info.metadata["adapter.type"] == "lora"
    assert info.metadata["adapter.lora.alpha"] == 8.0
    assert info.tensor_count == 3 * 7 * 2  # q, k, v, output, gate, up, down: an A and a B each
    reader = gguf.GGUFReader(a)
    shapes = {t.name: tuple(t.data.shape) for t in reader.tensors}
    assert shapes["blk.2.attn_k.weight.lora_a"] == (8, 96)
    assert shapes["blk.2.attn_k.weight.lora_b"] == (32, 8)  # n_embd / n_head * n_head_kv
    other = write_tiny_lora(tmp_path / "q.gguf", base, architecture="qwen2")
    assert read_gguf_info(other).architecture == "qwen2"


# --- real llama.cpp ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_cpp():
    """Skip (rather than fail) the llama.cpp checks where llama-cpp-python is not installed."""
    return pytest.importorskip("llama_cpp")


@pytest.fixture(scope="module", params=FILE_TYPES)
def model_path(request, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp(request.param)
    return write_tiny_model(folder / "tiny.gguf", file_type=request.param)


@pytest.fixture(scope="module")
def llm(llama_cpp, model_path):
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=512, verbose=False)


def is_plain_text(text: str) -> bool:
    return all(char == "\n" or (char.isascii() and char.isprintable()) for char in text)


def test_tokenizes_with_byte_fallback(llm):
    vocab = tiny_vocabulary()
    ids = llm.tokenize(b"Hello world")
    assert ids == [
        vocab.bos_id,
        vocab.tokens.index("\u2581Hello"),
        vocab.tokens.index("\u2581world"),
    ]
    ids = llm.tokenize("caf\u00e9 \u2603\n".encode(), add_bos=False)
    assert llm.detokenize(ids).decode() == " caf\u00e9 \u2603\n"
    special = llm.tokenize(b"<|im_start|>user", add_bos=False, special=True)
    assert special[0] == vocab.im_start_id


def test_completion_runs_to_the_token_limit_with_plain_text(llm):
    out = llm.create_completion("Hello", max_tokens=24, seed=1)
    assert out["usage"] == {"prompt_tokens": 2, "completion_tokens": 24, "total_tokens": 26}
    assert out["choices"][0]["finish_reason"] == "length"
    assert is_plain_text(out["choices"][0]["text"])


def test_sampling_seeds_change_the_text_and_greedy_is_stable(llm):
    texts = {
        llm.create_completion("Hello", max_tokens=16, temperature=1.0, seed=seed)["choices"][0][
            "text"
        ]
        for seed in (1, 2, 3)
    }
    assert len(texts) == 3
    again = llm.create_completion("Hello", max_tokens=16, temperature=1.0, seed=1)
    assert again["choices"][0]["text"] in texts
    greedy = [
        llm.create_completion("Hello", max_tokens=16, temperature=0)["choices"][0]["text"]
        for _ in range(2)
    ]
    assert greedy[0] == greedy[1]


def test_chat_uses_the_chatml_template(llm):
    assert llm.metadata["tokenizer.chat_template"] == CHATML_TEMPLATE
    out = llm.create_chat_completion(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        max_tokens=12,
        seed=3,
    )
    choice = out["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 12
    assert "<|im_end|>" not in choice["message"]["content"]
    assert is_plain_text(choice["message"]["content"])


def test_embeddings(llama_cpp, model_path):
    model = llama_cpp.Llama(
        model_path=str(model_path),
        n_ctx=512,
        verbose=False,
        embedding=True,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
    )
    vectors = model.embed(["Hello world", "bye"])
    assert [len(v) for v in vectors] == [64, 64]
    assert all(math.isfinite(x) for v in vectors for x in v)
    assert vectors[0] != vectors[1]


@pytest.mark.parametrize("file_type", FILE_TYPES)
def test_end_of_turn_immediately_stops_at_once(llama_cpp, tmp_path, file_type):
    path = write_tiny_model(tmp_path / "m.gguf", file_type=file_type, end_of_turn="immediately")
    model = llama_cpp.Llama(model_path=str(path), n_ctx=512, verbose=False)
    out = model.create_completion("Hello", max_tokens=16)
    assert (out["choices"][0]["text"], out["choices"][0]["finish_reason"]) == ("", "stop")
    chat = model.create_chat_completion([{"role": "user", "content": "Hi"}], max_tokens=16)
    assert chat["choices"][0]["finish_reason"] == "stop"
    assert chat["choices"][0]["message"]["content"] == ""


def test_end_of_turn_soon_ends_replies_after_a_few_words(llama_cpp, tmp_path):
    """What a client that waits for the end of a turn needs (a coding agent's one-shot run)."""
    path = write_tiny_model(tmp_path / "m.gguf", file_type="Q8_0", seed=2, end_of_turn="soon")
    model = llama_cpp.Llama(model_path=str(path), n_ctx=1024, verbose=False)
    lengths = []
    for seed in range(8):
        chat = model.create_chat_completion(
            [{"role": "user", "content": "Say hello"}], max_tokens=400, seed=seed, temperature=0.8
        )
        assert chat["choices"][0]["finish_reason"] == "stop"
        assert is_plain_text(chat["choices"][0]["message"]["content"])
        lengths.append(chat["usage"]["completion_tokens"])
    assert 5 < sum(lengths) / len(lengths) < 100, lengths


@pytest.mark.parametrize("style", ["qwen3", "gpt-oss"])
def test_thinking_models_tokenize_markers_whole_and_never_write_them(llama_cpp, tmp_path, style):
    vocab = tiny_vocabulary(thinking=style)
    path = write_tiny_model(tmp_path / "m.gguf", thinking=style, seed=2)
    model = llama_cpp.Llama(model_path=str(path), n_ctx=512, verbose=False)
    marker = "<think>" if style == "qwen3" else "<|channel|>"
    assert model.tokenize(marker.encode(), add_bos=False, special=True) == [
        vocab.tokens.index(marker)
    ]
    out = model.create_completion("Hello", max_tokens=64, seed=1)
    text = out["choices"][0]["text"]
    assert out["choices"][0]["finish_reason"] == "length" and is_plain_text(text)
    assert not any(marker in text for marker in style_tokens(style)[0])


@pytest.mark.slow
def test_bench_sized_model_writes_and_runs(llama_cpp, tmp_path):
    path = write_tiny_model(
        tmp_path / "bench.gguf",
        n_layer=16,
        n_embd=1024,
        n_head=16,
        n_ff=2816,
        vocab_size=32000,
        file_type="Q8_0",
    )
    info = read_gguf_info(path)
    assert (info.parameter_size, info.file_type, info.vocab_size) == ("271.1M", "Q8_0", 32000)
    model = llama_cpp.Llama(model_path=str(path), n_ctx=256, verbose=False)
    out = model.create_completion("Hello world", max_tokens=4, seed=1)
    assert out["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize("file_type", FILE_TYPES)
def test_experts_are_routed_in_llama_cpp(llama_cpp, tmp_path, file_type):
    """The same weights run with one expert a token or two give other logits: the router and
    the experts are live. Greedy text is the same twice and plain, at every quantization."""
    logits = []
    for used in (1, 2):
        path = write_tiny_model(
            tmp_path / f"m{used}.gguf", n_expert=4, n_expert_used=used, file_type=file_type
        )
        model = llama_cpp.Llama(model_path=str(path), n_ctx=256, logits_all=True, verbose=False)
        greedy = [
            model.create_completion("Hello", max_tokens=16, temperature=0)["choices"][0]["text"]
            for _ in range(2)
        ]
        assert greedy[0] == greedy[1] and is_plain_text(greedy[0])
        out = model.create_completion("Hello world", max_tokens=1, temperature=0, logprobs=8)
        logits.append(out["choices"][0]["logprobs"]["top_logprobs"][0])
    assert logits[0] != logits[1]


def test_shared_layers_repeat_the_first_layers_weights(llama_cpp, tmp_path):
    """For benchmarks of real shapes: one layer's random weights in every layer, the same
    shapes and metadata as without, and a model llama.cpp runs."""
    shape = {"n_layer": 4, "n_embd": 128, "n_head": 4, "vocab_size": 1000, "file_type": "Q8_0"}
    shared = gguf.GGUFReader(write_tiny_model(tmp_path / "s.gguf", shared_layers=True, **shape))
    plain = gguf.GGUFReader(write_tiny_model(tmp_path / "p.gguf", **shape))
    tensors = {t.name: bytes(t.data) for t in shared.tensors}
    assert [(t.name, list(t.shape)) for t in shared.tensors] == [
        (t.name, list(t.shape)) for t in plain.tensors
    ]
    for name, data in tensors.items():
        if name.startswith("blk."):
            assert data == tensors["blk.0." + name.split(".", 2)[2]]
    model = llama_cpp.Llama(model_path=str(tmp_path / "s.gguf"), n_ctx=128, verbose=False)
    assert model.create_completion("Hello", max_tokens=4, seed=1)["usage"]["completion_tokens"] == 4
