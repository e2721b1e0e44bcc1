"""GGUF metadata: real tiny models read right, and hostile or broken files only ever GGUFError."""

from __future__ import annotations

import contextlib
import json
import re
import struct
import tracemalloc
from pathlib import Path

import gguf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localllm.model_registry.errors import GGUFError
from localllm.model_registry.gguf_info import GGUFInfo, format_parameter_count, read_gguf_info
from localllm.model_registry.tiny_gguf import CHATML_TEMPLATE, write_tiny_model
from tests.support.model_writers.projector import write_tiny_projector

V = gguf.GGUFValueType
Q = gguf.GGMLQuantizationType


# --- a raw GGUF builder, so tests can write what no well-behaved writer would -----------------


def s(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return s(key) + struct.pack("<I", vtype) + payload


def kv_str(key: str, value: str) -> bytes:
    return kv(key, V.STRING, s(value))


def kv_u32(key: str, value: int) -> bytes:
    return kv(key, V.UINT32, struct.pack("<I", value))


def kv_array(key: str, itype: int, items: list[bytes], count: int | None = None) -> bytes:
    header = struct.pack("<IQ", itype, len(items) if count is None else count)
    return kv(key, V.ARRAY, header + b"".join(items))


def tensor(name: str, dims: list[int], ggml_type: int = Q.F32, offset: int = 0) -> bytes:
    return (
        s(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", ggml_type, offset)
    )


def gguf_bytes(
    kvs: list[bytes],
    tensors: list[bytes] = (),
    data: bytes = b"",
    *,
    version: int = 3,
    n_tensors: int | None = None,
    n_kv: int | None = None,
) -> bytes:
    head = b"GGUF" + struct.pack(
        "<IQQ",
        version,
        n_tensors if n_tensors is not None else len(tensors),
        n_kv if n_kv is not None else len(kvs),
    )
    body = head + b"".join(kvs) + b"".join(tensors)
    if tensors:
        body += b"\0" * (-len(body) % 32)
    return body + data


ARCH = kv_str("general.architecture", "llama")


def small_model() -> bytes:
    """A valid file with every value kind: scalars, strings, arrays and two tensors."""
    return gguf_bytes(
        [
            ARCH,
            kv_str("general.name", "small"),
            kv_u32("llama.context_length", 4096),
            kv("llama.rope.freq_base", V.FLOAT32, struct.pack("<f", 10000.0)),
            kv("general.flag", V.BOOL, b"\x01"),
            kv_array("tokenizer.ggml.tokens", V.STRING, [s("a"), s("b"), s("c")]),
            kv_array(
                "llama.attention.head_count", V.UINT32, [struct.pack("<I", n) for n in (8, 4)]
            ),
        ],
        [tensor("a.weight", [4, 2], Q.F32, 0), tensor("b.weight", [4], Q.F32, 32)],
        b"\0" * 48,
    )


@pytest.fixture(scope="module")
def tiny_f16(tmp_path_factory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("m") / "f16.gguf", license="MIT")


def write(tmp_path: Path, data: bytes, name: str = "x.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- real files -----------------------------------------------------------------------------


@pytest.mark.parametrize("file_type", ["F16", "Q8_0"])
def test_reads_a_tiny_model(tmp_path, file_type):
    path = write_tiny_model(tmp_path / "m.gguf", file_type=file_type, n_head_kv=2, license="MIT")
    info = read_gguf_info(path)
    reference = gguf.GGUFReader(path)
    assert info.parameter_count == sum(t.n_elements for t in reference.tensors)
    assert (info.architecture, info.name, info.file_type) == ("llama", "tiny-llama", file_type)
    assert (info.context_length, info.embedding_length, info.block_count) == (2048, 64, 2)
    assert (info.head_count, info.head_count_kv) == (4, 2)
    assert info.chat_template == CHATML_TEMPLATE
    assert (info.tokenizer_model, info.license) == ("llama", "MIT")
    assert info.vocab_size == len(reference.fields["tokenizer.ggml.tokens"].data)
    assert info.tensor_count == len(reference.tensors) == 21
    assert info.kv_count == len(reference.fields) - 3  # the reader adds 3 pseudo-fields
    assert (info.version, info.is_projector, info.split_count, info.split_index) == (
        3,
        False,
        None,
        None,
    )
    assert info.parameter_size == format_parameter_count(info.parameter_count)


def test_metadata_keeps_small_values_and_drops_big_arrays(tiny_f16):
    metadata = read_gguf_info(tiny_f16).metadata
    assert metadata["llama.rope.freq_base"] == 10000.0
    assert metadata["tokenizer.ggml.bos_token_id"] == 1
    assert "tokenizer.ggml.tokens" not in metadata
    assert "tokenizer.ggml.scores" not in metadata


def test_summary_is_small_json(tiny_f16):
    summary = read_gguf_info(tiny_f16).to_summary()
    assert "metadata" not in summary
    assert summary["chat_template"] == CHATML_TEMPLATE
    assert json.loads(json.dumps(summary)) == summary
    assert len(json.dumps(summary)) < 2000


def test_projector(tmp_path):
    info = read_gguf_info(write_tiny_projector(tmp_path / "proj.gguf"))
    assert (info.architecture, info.is_projector, info.tensor_count) == ("clip", True, 25)


def test_small_hand_built_file(tmp_path):
    info = read_gguf_info(write(tmp_path, small_model()))
    assert isinstance(info, GGUFInfo)
    assert (info.name, info.context_length, info.vocab_size) == ("small", 4096, 3)
    assert info.head_count == 8  # a per-layer array: the largest
    assert info.parameter_count == 12
    assert info.file_type == "F32"  # no general.file_type: the main weight type
    assert info.metadata["general.flag"] is True


@pytest.mark.parametrize(
    ("file_type", "expected"),
    [
        (0, "F32"),
        (1, "F16"),
        (7, "Q8_0"),
        (15, "Q4_K_M"),
        (18, "Q6_K"),
        (32, "BF16"),
        (1024, "F16"),
        (9999, "F16"),
    ],
)
def test_file_type_names(tmp_path, file_type, expected):
    data = gguf_bytes(
        [ARCH, kv_u32("general.file_type", file_type)],
        [tensor("w", [2, 2], Q.F16, 0), tensor("norm", [64], Q.F32, 32)],
        b"\0" * 288,
    )
    assert read_gguf_info(write(tmp_path, data)).file_type == expected


def test_split_shards(tmp_path):
    split = [
        kv("split.no", V.UINT16, struct.pack("<H", 1)),
        kv("split.count", V.UINT16, struct.pack("<H", 3)),
    ]
    info = read_gguf_info(write(tmp_path, gguf_bytes(split, [tensor("w", [8])], b"\0" * 32)))
    assert (info.architecture, info.split_index, info.split_count) == ("", 1, 3)
    assert info.parameter_count == 8
    first = [kv("split.no", V.UINT16, struct.pack("<H", 0)), split[1]]
    with pytest.raises(GGUFError, match=r"no general\.architecture"):
        read_gguf_info(write(tmp_path, gguf_bytes(first)))


def test_huge_strings_are_skipped_not_kept(tmp_path):
    data = gguf_bytes([ARCH, kv_str("general.description", "x" * (2 << 20))])
    info = read_gguf_info(write(tmp_path, data))
    assert "general.description" not in info.metadata


def test_a_large_vocabulary_is_counted_in_bounded_memory(tmp_path):
    tokens = [s(f"tok{i}") for i in range(150_000)]
    path = write(tmp_path, gguf_bytes([ARCH, kv_array("tokenizer.ggml.tokens", V.STRING, tokens)]))
    tracemalloc.start()
    try:
        info = read_gguf_info(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.vocab_size == 150_000
    assert peak < 1 << 20


def test_invalid_utf8_in_values_is_tolerated(tmp_path):
    data = gguf_bytes([ARCH, kv("general.name", V.STRING, s(b"bad \xff\xfe name"))])
    assert read_gguf_info(write(tmp_path, data)).name == "bad \ufffd\ufffd name"


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_gguf_info(tmp_path / "absent.gguf")


# --- hostile and broken files -----------------------------------------------------------------

HOSTILE = {
    "empty": (b"", "empty"),
    "short": (b"GG", "bad magic"),
    "wrong magic": (b"GGML" + bytes(20), "bad magic"),
    "version 99": (gguf_bytes([ARCH], version=99), "version 99"),
    "version 1": (gguf_bytes([ARCH], version=1), "version 1"),
    "big-endian": (gguf_bytes([ARCH], version=3 << 24), "big-endian"),
    "header only": (b"GGUF\x03\0\0\0", "truncated"),
    "absurd tensor count": (gguf_bytes([ARCH], n_tensors=2**63), "number of tensors"),
    "too many tensors": (gguf_bytes([ARCH], n_tensors=2_000_000), "number of tensors"),
    "absurd kv count": (gguf_bytes([ARCH], n_kv=2**60), "number of metadata keys"),
    "kv count past the end": (gguf_bytes([ARCH], n_kv=9), "number of metadata keys"),
    "kv missing": (gguf_bytes([ARCH], n_kv=2), "truncated"),
    "key length 2**63": (gguf_bytes([struct.pack("<Q", 2**63) + b"k" * 20]), "impossible length"),
    "empty key": (gguf_bytes([kv("", V.UINT8, b"\0")]), "impossible length"),
    "string length 2**63": (
        gguf_bytes([kv("general.name", V.STRING, struct.pack("<Q", 2**63) + b"x" * 16)]),
        "impossibly long",
    ),
    "string past the end": (
        gguf_bytes([kv("general.name", V.STRING, struct.pack("<Q", 1000) + b"x" * 16)]),
        "truncated",
    ),
    "array count 2**62": (
        gguf_bytes([kv_array("tokenizer.ggml.scores", V.FLOAT32, [], count=2**62)]),
        "truncated",
    ),
    "string array count 2**62": (
        gguf_bytes([kv_array("tokenizer.ggml.tokens", V.STRING, [s("a")], count=2**62)]),
        "truncated",
    ),
    "string array of huge strings": (
        gguf_bytes([kv_array("t", V.STRING, [struct.pack("<Q", 2**63)] * 300, count=300)]),
        "impossibly long",
    ),
    "nested array": (gguf_bytes([kv_array("a", V.ARRAY, [bytes(12)])]), "nested array"),
    "unknown value type": (gguf_bytes([kv("a", 99, b"\0" * 8)]), "unknown value type"),
    "unknown item type": (gguf_bytes([kv_array("a", 77, [b"\0"])]), "unknown array item type"),
    "duplicate key": (gguf_bytes([ARCH, ARCH]), "duplicate key"),
    "alignment not a power of two": (
        gguf_bytes([ARCH, kv_u32("general.alignment", 24)]),
        "power of two",
    ),
    "alignment zero": (gguf_bytes([ARCH, kv_u32("general.alignment", 0)]), "power of two"),
    "alignment a string": (gguf_bytes([ARCH, kv_str("general.alignment", "32")]), "not an integer"),
    "no architecture": (gguf_bytes([kv_str("general.name", "x")]), "no general.architecture"),
    "architecture not a string": (gguf_bytes([kv_u32("general.architecture", 7)]), "not a string"),
    "tensor offset past the end": (
        gguf_bytes([ARCH], [tensor("w", [8], Q.F32, 1 << 40)], b"\0" * 32),
        "past the end",
    ),
    "tensor data truncated": (gguf_bytes([ARCH], [tensor("w", [32])], b"\0" * 32), "truncated"),
    "n_dims 100": (gguf_bytes([ARCH], [tensor("w", [1] * 100)]), "dimensions"),
    "huge dims": (gguf_bytes([ARCH], [tensor("w", [2**62, 2**62])], b"\0" * 32), "larger"),
    "unknown tensor type": (gguf_bytes([ARCH], [tensor("w", [8], 200)]), "unknown type"),
    "tensor name too long": (gguf_bytes([ARCH], [tensor("w" * 100, [8])]), "too long"),
    "misaligned offset": (
        gguf_bytes([ARCH], [tensor("w", [8], Q.F32, 4)], b"\0" * 64),
        "misaligned",
    ),
    "partial quant block": (
        gguf_bytes([ARCH], [tensor("w", [33, 1], Q.Q8_0)], b"\0" * 64),
        "quantization blocks",
    ),
    "duplicate tensor": (
        gguf_bytes([ARCH], [tensor("w", [8]), tensor("w", [8], Q.F32, 32)], b"\0" * 64),
        "duplicate tensor",
    ),
    "tensor info truncated": (gguf_bytes([ARCH], n_tensors=1) + bytes(10), "truncated"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_files_raise_a_gguf_error_saying_why(tmp_path, case):
    """Absurd counts and lengths are refused as they are read: a reader that believed 2**62
    items would loop or allocate until the suite's timeout instead of raising."""
    data, message = HOSTILE[case]
    path = write(tmp_path, data)
    with pytest.raises(GGUFError, match=re.escape(message)) as caught:
        read_gguf_info(path)
    assert str(tmp_path) not in str(caught.value)
    assert "x.gguf" not in str(caught.value)


def test_every_truncation_of_a_real_model_is_a_gguf_error(tmp_path, tiny_f16):
    data = tiny_f16.read_bytes()
    header_end = len(data) - sum(t.n_bytes for t in gguf.GGUFReader(tiny_f16).tensors) - 64
    cuts = [*range(0, header_end, 89), header_end, header_end + 100, len(data) // 2, len(data) - 1]
    for cut in cuts:
        with pytest.raises(GGUFError):
            read_gguf_info(write(tmp_path, data[:cut]))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "fuzz.gguf"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6)
)
def test_flipped_bytes_give_info_or_gguf_error(scratch, flips):
    data = bytearray(small_model())
    for position, value in flips:
        data[position % len(data)] = value
    scratch.write_bytes(bytes(data))
    with contextlib.suppress(GGUFError):
        assert isinstance(read_gguf_info(scratch), GGUFInfo)


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0"),
        (999, "999"),
        (1_000, "1.0K"),
        (1_500, "1.5K"),
        (161_984, "162.0K"),
        (494_032_768, "494.0M"),
        (999_960_000, "1.0B"),
        (7_615_616_512, "7.6B"),
        (70_553_706_496, "70.6B"),
        (1_000_000_000_000, "1.0T"),
        (671_026_419_200, "671.0B"),
    ],
)
def test_format_parameter_count(count, text):
    assert format_parameter_count(count) == text


def test_format_parameter_count_rejects_negative():
    with pytest.raises(ValueError):
        format_parameter_count(-1)
