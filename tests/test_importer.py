"""Importing GGUF files and Modelfiles into the store, and loading the result in llama.cpp."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import gguf
import numpy as np
import pytest

from localllm.daemon.inference.resolve import resolve_model
from localllm.model_registry.errors import GGUFError, ModelfileError
from localllm.model_registry.importer import create_from_modelfile, find_shards, import_gguf
from localllm.model_registry.modelfile import parse_modelfile
from localllm.model_registry.store import LayerType, show_model
from tests.support.adapters import NOT_ADAPTERS, not_an_adapter
from tests.support.model_writers.lora import write_tiny_lora
from tests.support.model_writers.projector import write_tiny_projector
from tests.support.store import assert_store_consistent


def store_files(store) -> list[str]:
    return sorted(str(p.relative_to(store.root)) for p in store.root.rglob("*") if p.is_file())


def test_import_a_gguf_file(store, tiny_model_path):
    model_id = import_gguf(store, "tiny:v1", tiny_model_path)
    [entry] = store.list_models()
    assert entry.name.display == "tiny:v1" and entry.model_id == model_id
    [layer] = entry.manifest.layers_of(LayerType.MODEL)
    assert store.blobs.path(layer.digest).read_bytes() == tiny_model_path.read_bytes()
    details = show_model(store, "tiny:v1")
    assert details.config["architecture"] == "llama"
    assert details.config["file_type"] == "F16"
    assert details.gguf["context_length"] == 2048
    assert "<|im_start|>" in details.template
    assert_store_consistent(store)


def test_the_stored_model_loads_in_llama_cpp_and_generates(imported_store):
    import llama_cpp

    manifest = imported_store.read_manifest("tiny")
    path = imported_store.blobs.path(manifest.layers_of(LayerType.MODEL)[0].digest)
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_threads=2, verbose=False)
    result = llm.create_completion("Hello", max_tokens=8, temperature=0.0)
    assert result["usage"]["completion_tokens"] > 0
    assert isinstance(result["choices"][0]["text"], str)


@pytest.mark.parametrize("cut", [0, 3, 4, 16, 100, 1000, -1000, -1])
def test_truncated_gguf_is_refused_and_the_store_is_untouched(
    store, tiny_model_path, tmp_path, cut
):
    broken = tmp_path / "broken.gguf"
    data = tiny_model_path.read_bytes()
    broken.write_bytes(data[:cut])
    before = store_files(store)
    with pytest.raises(GGUFError):
        import_gguf(store, "broken", broken)
    assert store_files(store) == before
    assert store.list_models() == []


def test_missing_file_error_names_no_directory(store, tmp_path):
    with pytest.raises(GGUFError, match=r"cannot read nothere\.gguf") as caught:
        import_gguf(store, "x", tmp_path / "nothere.gguf")
    assert str(tmp_path) not in str(caught.value)


def test_non_gguf_file_is_refused(store, tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_text("<html>404 not found</html>")
    with pytest.raises(GGUFError, match="not a GGUF"):
        import_gguf(store, "fake", fake)
    assert store.list_models() == []


def _write_shard(path: Path, index: int, count: int, tensor: str) -> None:
    writer = gguf.GGUFWriter(path, "llama" if index == 0 else None)
    if index != 0:
        writer.kv_data[0].pop("general.architecture", None)
    writer.add_uint16("split.no", index)
    writer.add_uint16("split.count", count)
    writer.add_int32("split.tensors.count", count)
    if index == 0:
        writer.add_context_length(128)
    writer.add_tensor(tensor, np.full((32,), index, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_sharded_gguf_imports_as_ordered_model_layers(store, tmp_path):
    for index in range(3):
        _write_shard(tmp_path / f"big-{index + 1:05d}-of-00003.gguf", index, 3, f"t{index}")
    second = tmp_path / "big-00002-of-00003.gguf"
    assert [p.name for p in find_shards(second)] == [
        f"big-{i:05d}-of-00003.gguf" for i in (1, 2, 3)
    ]
    import_gguf(store, "big", second)
    layers = store.read_manifest("big").layers_of(LayerType.MODEL)
    contents = [store.blobs.path(layer.digest).read_bytes() for layer in layers]
    expected = [(tmp_path / f"big-{i:05d}-of-00003.gguf").read_bytes() for i in (1, 2, 3)]
    assert contents == expected


def test_incomplete_shards_are_refused(store, tmp_path):
    _write_shard(tmp_path / "big-00001-of-00002.gguf", 0, 2, "t0")
    with pytest.raises(GGUFError, match=r"missing big-00002-of-00002\.gguf"):
        import_gguf(store, "big", tmp_path / "big-00001-of-00002.gguf")
    assert store.list_models() == []


def test_projector_imports_as_projector_layer(store, tiny_model_path, tmp_path):
    projector = write_tiny_projector(tmp_path / "mmproj-tiny-f16.gguf")
    import_gguf(store, "vision", tiny_model_path, projector=projector)
    details = show_model(store, "vision")
    assert details.has_projector
    assert details.config["projector"]["architecture"] == "clip"
    target = resolve_model(store, "vision").target  # what the scheduler loads, and budgets for
    assert Path(target.projector_path).read_bytes() == projector.read_bytes()
    sizes = tiny_model_path.stat().st_size + projector.stat().st_size
    assert target.footprint.weights_bytes == sizes
    with pytest.raises(GGUFError, match="projector"):
        import_gguf(store, "oops", projector)


MODELFILE = '''
# a comment
FROM ./tiny.gguf
SYSTEM """You are terse.
Very terse."""
TEMPLATE "{{ messages[0].content }}"
PARAMETER temperature 0.2
PARAMETER stop "<|im_end|>"
PARAMETER stop "###"
PARAMETER num_ctx 1024
LICENSE MIT
MESSAGE user hi
MESSAGE assistant hello
'''


def test_create_from_a_modelfile_with_a_file(store, tiny_model_path, tmp_path):
    shutil.copy(tiny_model_path, tmp_path / "tiny.gguf")
    modelfile = parse_modelfile(MODELFILE)
    create_from_modelfile(store, "terse", modelfile, lambda ref: tmp_path / ref)
    details = show_model(store, "terse")
    assert details.system == "You are terse.\nVery terse."
    assert details.template == "{{ messages[0].content }}"
    assert details.parameters == {
        "temperature": 0.2,
        "stop": ["<|im_end|>", "###"],
        "num_ctx": 1024,
    }
    assert details.license == "MIT"
    assert details.messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_create_from_an_existing_model_shares_weights_and_merges_parameters(imported_store):
    base = imported_store.read_manifest("tiny")
    modelfile = parse_modelfile("FROM tiny\nPARAMETER temperature 0.1\nSYSTEM be brief")
    create_from_modelfile(imported_store, "brief", modelfile, lambda ref: pytest.fail(ref))
    derived = imported_store.read_manifest("brief")
    assert derived.layers_of(LayerType.MODEL) == base.layers_of(LayerType.MODEL)
    again = parse_modelfile("FROM brief\nPARAMETER top_k 5")
    create_from_modelfile(imported_store, "brief2", again, lambda ref: pytest.fail(ref))
    details = show_model(imported_store, "brief2")
    assert details.parameters == {"temperature": 0.1, "top_k": 5}
    assert details.system == "be brief"
    imported_store.remove("tiny")
    assert_store_consistent(imported_store)  # the weights live on in the derived models


def test_create_from_a_missing_model_is_a_clear_error(store):
    with pytest.raises(ModelfileError, match="pull it first"):
        create_from_modelfile(store, "x", parse_modelfile("FROM nothere"), lambda ref: Path(ref))


@pytest.fixture
def lora(tmp_path, tiny_model_path):
    return write_tiny_lora(tmp_path / "lora.gguf", tiny_model_path)


def test_adapters_are_stored_with_their_scale_and_reach_the_load_target(
    imported_store, tiny_model_path, lora, tmp_path
):
    write_tiny_lora(tmp_path / "style.gguf", tiny_model_path, seed=5)
    text = "FROM tiny\nADAPTER ./lora.gguf\nADAPTER ./style.gguf 0.5\n"
    create_from_modelfile(imported_store, "styled", parse_modelfile(text), lambda r: tmp_path / r)
    manifest = imported_store.read_manifest("styled")
    layers = manifest.layers_of(LayerType.ADAPTER)
    assert [layer.scale for layer in layers] == [1.0, 0.5]
    assert imported_store.blobs.path(layers[0].digest).read_bytes() == lora.read_bytes()
    target = resolve_model(imported_store, "styled").target
    assert [(Path(a.path).name, a.scale) for a in target.adapters] == [
        (layers[0].digest.filename, 1.0),
        (layers[1].digest.filename, 0.5),
    ]
    assert resolve_model(imported_store, "tiny").target.adapters == ()
    # a model made from the adapted one keeps its adapters, at their scales
    create_from_modelfile(imported_store, "again", parse_modelfile("FROM styled\nSYSTEM x"), Path)
    assert imported_store.read_manifest("again").layers_of(LayerType.ADAPTER) == layers
    assert_store_consistent(imported_store)


@pytest.mark.parametrize("kind", NOT_ADAPTERS)
@pytest.mark.parametrize("source", ["FROM tiny", "FROM ./base.gguf"])
def test_what_is_not_a_lora_adapter_for_the_base_is_refused_and_nothing_is_stored(
    imported_store, tiny_model_path, tmp_path, kind, source
):
    shutil.copy(tiny_model_path, tmp_path / "base.gguf")
    path, message = not_an_adapter(kind, tmp_path, tiny_model_path)
    before = store_files(imported_store)
    text = f"{source}\nADAPTER ./{path.name}\n"
    with pytest.raises(GGUFError, match=re.escape(message)) as caught:
        create_from_modelfile(imported_store, "bad", parse_modelfile(text), lambda r: tmp_path / r)
    assert str(tmp_path) not in str(caught.value)
    assert store_files(imported_store) == before


def test_a_lora_adapter_is_not_a_model(store, lora):
    with pytest.raises(GGUFError, match="this file is a LoRA adapter, not a model"):
        import_gguf(store, "lora", lora)
    assert store.list_models() == []
