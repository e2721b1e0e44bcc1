"""Model names: the grammar, defaults, display form, and every traversal trick we know."""

from __future__ import annotations

import pytest

from localllm.model_registry.errors import InvalidNameError
from localllm.model_registry.names import ModelName, parse_name

VALID = [
    # text, host, namespace, model, tag, display
    ("qwen", "localllm", "library", "qwen", "latest", "qwen"),
    ("qwen:7b", "localllm", "library", "qwen", "7b", "qwen:7b"),
    ("Qwen:7B", "localllm", "library", "qwen", "7b", "qwen:7b"),
    ("llama3.2:3b", "localllm", "library", "llama3.2", "3b", "llama3.2:3b"),
    ("phi4-mini", "localllm", "library", "phi4-mini", "latest", "phi4-mini"),
    ("me/mymodel:v1", "localllm", "me", "mymodel", "v1", "me/mymodel:v1"),
    ("library/qwen:latest", "localllm", "library", "qwen", "latest", "qwen"),
    ("localllm/library/qwen:latest", "localllm", "library", "qwen", "latest", "qwen"),
    (
        "hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M",
        "hf.co",
        "qwen",
        "qwen2.5-0.5b-instruct-gguf",
        "q4_k_m",
        "hf.co/qwen/qwen2.5-0.5b-instruct-gguf:q4_k_m",
    ),
    (
        "huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF",
        "hf.co",
        "bartowski",
        "llama-3.2-3b-instruct-gguf",
        "latest",
        "hf.co/bartowski/llama-3.2-3b-instruct-gguf",
    ),
    (
        "hf.co/org/repo:model-q8_0.gguf",
        "hf.co",
        "org",
        "repo",
        "model-q8_0.gguf",
        "hf.co/org/repo:model-q8_0.gguf",
    ),
    ("_private:x", "localllm", "library", "_private", "x", "_private:x"),
    (
        "registry.example.com/team/model:1.0",
        "registry.example.com",
        "team",
        "model",
        "1.0",
        "registry.example.com/team/model:1.0",
    ),
    ("  qwen:7b  ", "localllm", "library", "qwen", "7b", "qwen:7b"),
]


@pytest.mark.parametrize(("text", "host", "namespace", "model", "tag", "display"), VALID)
def test_valid_names_parse_fill_defaults_and_display_short(
    text, host, namespace, model, tag, display
):
    name = parse_name(text)
    assert (name.host, name.namespace, name.model, name.tag) == (host, namespace, model, tag)
    assert name.display == display
    assert parse_name(name.display) == name
    assert parse_name(name.full) == name


INVALID = [
    "",
    " ",
    ":",
    "qwen:",
    ":7b",
    "..",
    ".",
    "../qwen",
    "qwen/..",
    "a/../../b",
    "a/b/../c",
    "../../etc/passwd",
    "/etc/passwd",
    "/qwen",
    "qwen/",
    "a//b",
    "a/b/c/d",
    "a/b/c/d:tag",
    "..\\..\\windows",
    "a\\b",
    "C:\\models\\x",
    "qwen:../../x",
    "qwen:..",
    "qwen:.hidden",
    "qwen:tag.",
    "model.",
    ".hidden",
    "-dash",
    "qwen\x00",
    "qwen\x00:7b",
    "qw\nen",
    "qwen\t",
    "qwen\r:7b",
    "\x1b[31mqwen",
    "CON",
    "con:7b",
    "nul",
    "aux.txt",
    "com1",
    "LPT9:latest",
    "me/prn",
    "prn.gguf/x",
    "qwen:con",
    "q" * 97,
    "qwen:" + "t" * 129,
    "n" * 97 + "/model",
    "h" * 254 + "/ns/model",
    "x" * 700,
    "qw\u0435n",  # Cyrillic e
    "\uff51wen",  # full-width q
    "qwen:\uff17b",  # full-width digit
    "qwen\u200b",  # zero-width space
    "qw\u2024en",  # one dot leader (looks like '.')
    "qwen\u2215x",  # division slash (looks like '/')
    "hf.co/repo",
    "huggingface.co/repo:q4",
    "qwen 7b",
    "qwen:7b:extra",
    "qwen@sha256:abc",
    "%2e%2e/x",
    "~/model",
    "$HOME",
    "a/b c/d",
]


@pytest.mark.parametrize("text", INVALID)
def test_invalid_names_are_rejected(text):
    with pytest.raises(InvalidNameError):
        parse_name(text)


@pytest.mark.parametrize("value", [None, 7, b"qwen", ["qwen"]])
def test_non_strings_are_rejected(value):
    with pytest.raises(InvalidNameError):
        parse_name(value)


@pytest.mark.parametrize(
    "parts",
    [
        ("localllm", "library", "..", "latest"),
        ("localllm", "library", "Qwen", "latest"),  # canonical form is lower-case
        ("localllm", "", "qwen", "latest"),
        ("..", "library", "qwen", "latest"),
        ("localllm", "library", "qwen", "a/b"),
    ],
)
def test_direct_construction_is_validated_too(parts):
    with pytest.raises(InvalidNameError):
        ModelName(*parts)


def test_every_valid_name_maps_inside_the_manifest_directory(tmp_path):
    from localllm.model_registry.store import StoreLayout

    layout = StoreLayout(tmp_path)
    for text, *_ in VALID:
        path = layout.manifest_path(parse_name(text)).resolve()
        assert path.is_relative_to(layout.manifests_dir.resolve())
        assert len(path.relative_to(layout.manifests_dir.resolve()).parts) == 4


def test_catalog_and_hugging_face_flags():
    assert parse_name("qwen:7b").is_catalog
    assert not parse_name("me/qwen").is_catalog
    assert parse_name("hf.co/a/b").is_hugging_face
