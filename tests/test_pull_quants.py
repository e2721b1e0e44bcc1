"""Which files of a GGUF repository a tag means."""

from __future__ import annotations

import pytest

from localllm.model_registry.errors import PullError, QuantNotFoundError
from localllm.model_registry.pull.quants import QUANT_PREFERENCE, group_gguf_files, quant_of, select

BARTOWSKI = [
    "README.md",
    "Llama-3.2-3B-Instruct-IQ4_XS.gguf",
    "Llama-3.2-3B-Instruct-Q3_K_M.gguf",
    "Llama-3.2-3B-Instruct-Q4_K_M.gguf",
    "Llama-3.2-3B-Instruct-Q4_K_S.gguf",
    "Llama-3.2-3B-Instruct-Q8_0.gguf",
    "Llama-3.2-3B-Instruct-f16.gguf",
    "Llama-3.2-3B-Instruct.imatrix",
]
SHARDED = [
    "Q8_0/Big-Q8_0-00002-of-00003.gguf",
    "Q8_0/Big-Q8_0-00001-of-00003.gguf",
    "Q8_0/Big-Q8_0-00003-of-00003.gguf",
    "Big-Q2_K.gguf",
]


@pytest.mark.parametrize(
    ("filename", "quant"),
    [
        ("qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"),
        ("tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf", "Q4_K_M"),
        ("nomic-embed-text-v1.5.f16.gguf", "F16"),
        ("Model-BF16.gguf", "BF16"),
        ("model-fp16.gguf", "F16"),
        ("Q8_0/Big-Q8_0-00001-of-00003.gguf", "Q8_0"),
        ("DeepSeek-R1-UD-IQ1_S-00001-of-00003.gguf", "UD-IQ1_S"),
        ("Qwen3-8B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"),
        ("gemma-3-4b-it-IQ4_NL.gguf", "IQ4_NL"),
        ("phi-4-Q6_K_L.gguf", "Q6_K_L"),
        ("model.gguf", None),
    ],
)
def test_quant_of_file_names(filename, quant):
    assert quant_of(filename) == quant


@pytest.mark.parametrize(
    ("files", "tag", "expected_quant", "expected_files"),
    [
        (BARTOWSKI, "latest", "Q4_K_M", ["Llama-3.2-3B-Instruct-Q4_K_M.gguf"]),
        (BARTOWSKI, "q8_0", "Q8_0", ["Llama-3.2-3B-Instruct-Q8_0.gguf"]),
        (BARTOWSKI, "Q8_0", "Q8_0", ["Llama-3.2-3B-Instruct-Q8_0.gguf"]),
        (BARTOWSKI, "F16", "F16", ["Llama-3.2-3B-Instruct-f16.gguf"]),
        (BARTOWSKI, "iq4_xs", "IQ4_XS", ["Llama-3.2-3B-Instruct-IQ4_XS.gguf"]),
        # a file name works as a tag, with or without the extension
        (BARTOWSKI, "llama-3.2-3b-instruct-q4_k_s.gguf", "Q4_K_S", [BARTOWSKI[4]]),
        (BARTOWSKI, "llama-3.2-3b-instruct-q3_k_m", "Q3_K_M", [BARTOWSKI[2]]),
        # no Q4_K_M: the next in the preference order
        (BARTOWSKI[4:], "latest", "Q4_K_S", [BARTOWSKI[4]]),
        (["m-Q8_0.gguf", "m-Q6_K.gguf", "m-F16.gguf"], "latest", "Q6_K", ["m-Q6_K.gguf"]),
        (["m-F32.gguf", "m-BF16.gguf", "m-F16.gguf"], "latest", "F16", ["m-F16.gguf"]),
        (["m-Q2_K.gguf", "m-F16.gguf"], "latest", "Q2_K", ["m-Q2_K.gguf"]),
        (["x-UD-Q4_K_XL.gguf", "x-Q8_0.gguf"], "q4_k_xl", "UD-Q4_K_XL", ["x-UD-Q4_K_XL.gguf"]),
        # shards, in a folder per quant, come back in shard order
        (SHARDED, "q8_0", "Q8_0", sorted(SHARDED[:3])),
        (SHARDED, "big-q8_0-00002-of-00003.gguf", "Q8_0", sorted(SHARDED[:3])),
        (SHARDED, "latest", "Q8_0", sorted(SHARDED[:3])),
        (["only.gguf"], "latest", "only", ["only.gguf"]),
    ],
)
def test_select(files, tag, expected_quant, expected_files):
    selection = select(files, tag, "org/repo")
    assert selection.quant == expected_quant
    assert list(selection.model_files) == expected_files
    assert selection.projector is None


def test_unknown_quant_lists_the_available_ones():
    with pytest.raises(QuantNotFoundError) as caught:
        select(BARTOWSKI, "q2_k", "org/repo")
    message = str(caught.value)
    assert "has no Q2_K file" in message
    assert "Q4_K_M, Q4_K_S, IQ4_XS, Q8_0, Q3_K_M, F16" in message
    assert "hf.co/org/repo:Q4_K_M" in message
    assert caught.value.available[0] == "Q4_K_M"


def test_projector_prefers_f16():
    files = ["m-Q4_K_M.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-f16.gguf", "mmproj-m-f32.gguf"]
    selection = select(files, "latest", "org/repo")
    assert selection.model_files == ("m-Q4_K_M.gguf",)
    assert selection.projector == "mmproj-m-f16.gguf"


def test_missing_shards_and_empty_repos_are_errors():
    with pytest.raises(PullError, match="should have 3 shards"):
        select(SHARDED[:2], "q8_0", "org/repo")
    with pytest.raises(PullError, match="no GGUF model files"):
        select(["README.md", "model.safetensors", "mmproj-x-f16.gguf"], "latest", "org/repo")


def test_groups_are_ordered_by_preference():
    groups, projectors = group_gguf_files(BARTOWSKI)
    assert [group.quant for group in groups] == [
        "Q4_K_M",
        "Q4_K_S",
        "IQ4_XS",
        "Q8_0",
        "Q3_K_M",
        "F16",
    ]
    assert projectors == []
    assert QUANT_PREFERENCE[0] == "Q4_K_M"
