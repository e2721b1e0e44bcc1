"""The curated short-name catalog."""

from __future__ import annotations

import json

import pytest

from localllm.model_registry.errors import PullError, UnknownModelError
from localllm.model_registry.names import parse_name
from localllm.model_registry.pull.catalog import CAPABILITIES, KINDS, Catalog


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load()


def test_builtin_catalog_has_enough_of_each_kind(catalog):
    entries = list(catalog)
    kinds = [entry.kind for entry in entries]
    assert len(entries) >= 20
    assert kinds.count("embedding") >= 2
    assert kinds.count("vision") >= 1
    assert set(kinds) <= set(KINDS)


def test_every_entry_is_valid(catalog):
    for entry in catalog:
        assert all(name.is_catalog for name in entry.names), entry.name
        assert entry.hf_name.is_hugging_face
        assert entry.hf_name.namespace == entry.repo.split("/")[0].lower()
        assert entry.size > 10_000_000, entry.name
        assert entry.description and entry.parameter_size
        assert catalog.lookup(entry.name) is entry
        for alias in entry.aliases:
            assert catalog.lookup(alias) is entry


def test_entries_say_what_their_models_can_do(catalog):
    """The app shows these as badges before a download; a model's kind agrees with them."""
    for entry in catalog:
        assert set(entry.capabilities) <= set(CAPABILITIES), entry.name
        assert (entry.kind == "vision") == ("vision" in entry.capabilities), entry.name
        assert (entry.kind == "embedding") == ("embedding" in entry.capabilities), entry.name
        assert (entry.kind == "rerank") == ("rerank" in entry.capabilities), entry.name
    assert catalog.lookup("qwen3:4b").capabilities == ("thinking", "tools")
    assert catalog.lookup("gemma3:4b").capabilities == ("vision",)
    assert catalog.lookup("gemma3:1b").capabilities == ()


@pytest.mark.parametrize(
    ("name", "repo"),
    [
        ("qwen:7b", "bartowski/Qwen2.5-7B-Instruct-GGUF"),
        ("qwen:0.5b", "Qwen/Qwen2.5-0.5B-Instruct-GGUF"),
        ("llama3.2:3b", "bartowski/Llama-3.2-3B-Instruct-GGUF"),
        ("LLAMA3.2", "bartowski/Llama-3.2-3B-Instruct-GGUF"),
        ("gemma3:4b", "ggml-org/gemma-3-4b-it-GGUF"),
        ("phi4-mini", "unsloth/Phi-4-mini-instruct-GGUF"),
        ("mistral:7b", "bartowski/Mistral-7B-Instruct-v0.3-GGUF"),
        ("deepseek-r1:7b", "unsloth/DeepSeek-R1-Distill-Qwen-7B-GGUF"),
        ("nomic-embed-text", "nomic-ai/nomic-embed-text-v1.5-GGUF"),
        ("library/qwen:7b", "bartowski/Qwen2.5-7B-Instruct-GGUF"),
    ],
)
def test_lookup(catalog, name, repo):
    assert catalog.lookup(name).repo == repo
    assert catalog.lookup(parse_name(name)).repo == repo


def test_unknown_name_suggests_close_names_and_the_hf_form(catalog):
    with pytest.raises(UnknownModelError) as caught:
        catalog.lookup("qwen:14b")
    message = str(caught.value)
    assert "qwen:7b" in message and "qwen:0.5b" in message
    assert "hf.co/<org>/<repo>" in message
    with pytest.raises(UnknownModelError, match=r"did you mean.*llama3\.2"):
        catalog.lookup("lama3.2")
    with pytest.raises(UnknownModelError, match="localllm catalog"):
        catalog.lookup("zzzzzzzz")


def test_another_catalog_file_replaces_the_builtin_one(tmp_path):
    path = tmp_path / "catalog.json"
    model = {
        "name": "tiny:1m",
        "aliases": ["tiny"],
        "repo": "local/Tiny-GGUF",
        "quant": "Q8_0",
        "kind": "chat",
        "parameter_size": "1M",
        "size": 1000,
        "description": "a test model",
    }
    path.write_text(json.dumps({"version": 1, "models": [model]}))
    catalog = Catalog.load(path)
    assert len(catalog) == 1
    assert catalog.lookup("tiny").hf_name.display == "hf.co/local/tiny-gguf:q8_0"
    with pytest.raises(UnknownModelError):
        catalog.lookup("qwen:7b")


@pytest.mark.parametrize(
    "broken",
    [
        b"not json",
        b'{"models": [{"name": "x"}]}',
        b'{"models": [{"name": "x", "repo": "no-slash", "quant": "Q4_K_M", "kind": "chat",'
        b' "parameter_size": "1B", "size": 1, "description": "d"}]}',
        b'{"models": [{"name": "hf.co/a/b", "repo": "a/b", "quant": "Q4_K_M", "kind": "chat",'
        b' "parameter_size": "1B", "size": 1, "description": "d"}]}',
        b'{"models": [{"name": "x", "repo": "a/b", "quant": "Q4_K_M", "kind": "audio",'
        b' "parameter_size": "1B", "size": 1, "description": "d"}]}',
        b'{"models": [{"name": "x", "repo": "a/b", "quant": "Q4_K_M", "kind": "chat",'
        b' "capabilities": ["telepathy"], "parameter_size": "1B", "size": 1,'
        b' "description": "d"}]}',
    ],
)
def test_a_broken_catalog_file_is_a_clear_error(tmp_path, broken):
    path = tmp_path / "mine.json"
    path.write_bytes(broken)
    with pytest.raises(PullError, match=r"catalog file 'mine\.json' is invalid"):
        Catalog.load(path)


def test_a_missing_catalog_file_names_no_path(tmp_path):
    with pytest.raises(PullError) as caught:
        Catalog.load(tmp_path / "gone.json")
    assert str(tmp_path) not in str(caught.value)
