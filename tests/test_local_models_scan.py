"""Finding models other apps downloaded: fake Hugging Face, LM Studio and Ollama trees of
generated GGUF files, and the hostile cases a scan must survive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from localllm.model_registry.errors import GGUFError
from localllm.model_registry.local_models import ScanLimits, ScanRoots, describe_file, scan
from localllm.model_registry.store import Store
from localllm.model_registry.tiny_gguf import write_tiny_model as _write_tiny_model
from tests.support.model_writers.projector import write_tiny_projector
from tests.support.other_apps import hf_cache_model, lmstudio_model, ollama_model


def write_tiny_model(path: Path, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write_tiny_model(path, **kw)


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")


def _roots(tmp_path: Path, **kw) -> ScanRoots:
    return ScanRoots.defaults(tmp_path / "home", **kw)


def test_hugging_face_snapshot_links_are_resolved_and_named(tmp_path, store):
    hub = tmp_path / "home" / ".cache" / "huggingface" / "hub"
    snapshot = hf_cache_model(hub, "bartowski/Tiny-GGUF", "Tiny-Chat-Q8_0.gguf")
    result = scan(_roots(tmp_path), store)
    [model] = result.models
    assert (model.source, model.name) == ("huggingface", "tiny-chat:q8_0")
    assert model.path == snapshot and model.files == (snapshot,)
    assert model.architecture == "llama" and model.size == snapshot.stat().st_size
    assert model.expected[snapshot].hex == snapshot.resolve().name  # the LFS blob's name
    assert model.linkable and not model.in_store and not result.truncated


def test_lm_studio_ollama_and_named_folders(tmp_path, store):
    home = tmp_path / "home"
    lmstudio_model(home / ".lmstudio" / "models", "pub", "repo", "Alpha-7B-Q4_K_M.gguf", seed=1)
    write_tiny_projector(home / ".lmstudio" / "models" / "pub" / "repo" / "mmproj-F16.gguf")
    ollama_model(tmp_path / "ollama", "llama3.2", "3b", seed=2, template="{{ .Prompt }}")
    folder = tmp_path / "mine"
    write_tiny_model(folder / "deep" / "Beta.gguf", seed=3)
    roots = _roots(tmp_path, ollama_models=tmp_path / "ollama", folders=[folder])
    found = {m.name: m for m in scan(roots, store).models}
    assert set(found) == {"alpha-7b:q4_k_m", "llama3.2:3b", "beta"}
    alpha = found["alpha-7b:q4_k_m"]
    assert alpha.source == "lmstudio" and alpha.projector is not None  # a projector, not a model
    assert alpha.projector.name == "mmproj-F16.gguf"
    llama = found["llama3.2:3b"]
    assert llama.source == "ollama" and llama.extras.template == "{{ .Prompt }}"
    assert llama.extras.parameters == {"temperature": 0.25, "stop": ["<x>"]}
    assert llama.expected[llama.files[0]].filename == llama.files[0].name
    assert found["beta"].source == "folder"


def test_split_model_is_one_candidate(tmp_path, store):
    from tests.test_importer import _write_shard

    folder = tmp_path / "split"
    folder.mkdir()
    for index in range(3):
        _write_shard(folder / f"big-{index + 1:05d}-of-00003.gguf", index, 3, f"t{index}")
    [model] = scan(ScanRoots(folders=(folder,)), store).models
    assert model.name == "big" and len(model.files) == 3
    assert model.size == sum(p.stat().st_size for p in folder.iterdir())


def test_hostile_trees_are_skipped_not_followed(tmp_path, store):
    folder = tmp_path / "folder"
    outside = write_tiny_model(tmp_path / "elsewhere" / "Secret.gguf")
    folder.mkdir()
    os.symlink(outside, folder / "Link-Out.gguf")  # leads out of the root
    os.symlink(folder, folder / "loop")  # a directory loop
    os.symlink(folder / "a.gguf", folder / "b.gguf")
    os.symlink(folder / "b.gguf", folder / "a.gguf")  # a file loop
    (folder / "Fake.gguf").write_text("<html>not a model</html>")
    good = write_tiny_model(folder / "Good.gguf")
    (folder / "Cut.gguf").write_bytes(good.read_bytes()[:200])  # truncated header
    [model] = scan(ScanRoots(folders=(folder,)), store).models
    assert model.name == "good"


def test_hugging_face_link_outside_its_blobs_is_refused(tmp_path, store):
    hub = tmp_path / "hub"
    snapshot = hf_cache_model(hub, "org/repo", "Model.gguf")
    outside = write_tiny_model(tmp_path / "outside.gguf")
    evil = snapshot.parent / "Evil.gguf"
    os.symlink(outside, evil)
    assert [m.path for m in scan(ScanRoots(hugging_face=(hub,)), store).models] == [snapshot]


def test_a_huge_tree_is_bounded(tmp_path, store):
    folder = tmp_path / "huge"
    deep = folder
    for level in range(30):
        deep = deep / f"d{level}"
    deep.mkdir(parents=True)
    write_tiny_model(deep / "Too-Deep.gguf")
    for i in range(300):
        (folder / f"f{i}.txt").touch()
    result = scan(ScanRoots(folders=(folder,)), store, ScanLimits(max_depth=8, max_entries=200))
    assert result.models == () and result.truncated


def test_describe_file_checks_the_header(tmp_path, store):
    fake = tmp_path / "x.gguf"
    fake.write_text("hello")
    with pytest.raises(GGUFError) as caught:
        describe_file(fake, store)
    assert str(tmp_path) not in str(caught.value)
    projector = write_tiny_projector(tmp_path / "mmproj.gguf")
    with pytest.raises(GGUFError, match="projector"):
        describe_file(projector, store)
    model = describe_file(write_tiny_model(tmp_path / "Gamma-Q8_0.gguf"), store)
    assert model.name == "gamma:q8_0" and model.source == "file"


def test_the_walk_itself_never_leaves_its_root(tmp_path):
    from localllm.model_registry.local_models.walk import Budget, walk_ggufs

    folder = tmp_path / "root"
    folder.mkdir()
    os.symlink(write_tiny_model(tmp_path / "out" / "Out.gguf"), folder / "Out.gguf")
    os.symlink(tmp_path / "out", folder / "dir-link")
    inner = write_tiny_model(folder / "In.gguf")
    os.symlink(inner, folder / "Again.gguf")  # a link that stays inside is fine
    found = sorted(p.name for p in walk_ggufs(folder, Budget()))
    assert found == ["Again.gguf", "In.gguf"]
