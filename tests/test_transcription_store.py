"""Transcription models (Whisper in CTranslate2 form) in the store, as GGUFs are: one blob per
file with its name kept in the manifest (checked as strictly as a digest), a folder of hard
links made for the runner, ``rm``/``prune`` deleting folders nobody uses, ``verify`` as ever;
and the daemon's routes on them: tags, show, import of a folder, and a clear 400 where a GGUF
is needed. A small fake folder (a real ``model.bin`` layout, tiny) stands in for most tests;
the real Whisper base loads in faster-whisper from its store folder."""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import tempfile
from pathlib import Path

import pytest

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import (
    BlobNotFoundError,
    CorruptManifestError,
    ModelfileError,
    ModelKindError,
    ModelNotFoundError,
)
from localllm.model_registry.importer import FileEvents, create_from_modelfile, import_gguf
from localllm.model_registry.modelfile import parse_modelfile
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import Layer, LayerType, Manifest, Store
from localllm.model_registry.transcription import import_whisper_folder

WHISPER_CONFIG = {
    "alignment_heads": [[1, 0], [1, 1]],
    "lang_ids": [50259, 50260, 50261],
    "suppress_ids": [1, 2, 7],
    "suppress_ids_begin": [220, 50257],
}
FAKE_VARIABLES = (("encoder/conv1/weight", (16, 8)), ("decoder/embeddings/weight", (32, 16)))


def write_model_bin(
    path: Path,
    spec: str = "WhisperSpec",
    seed: int = 0,
    cut: int = 0,
    variables: tuple[tuple[str, tuple[int, int]], ...] = FAKE_VARIABLES,
) -> Path:
    """A CTranslate2 ``model.bin`` (binary version 6) of float16 variables, as the converter
    writes it; ``cut`` bytes are left off its end (a truncated download)."""
    rng = random.Random(seed)
    out = bytearray(struct.pack("<I", 6))
    out += _string(spec) + struct.pack("<II", 3, len(variables))
    for name, shape in variables:
        count = shape[0] * shape[1] * 2
        out += _string(name) + struct.pack("<B", len(shape))
        out += b"".join(struct.pack("<I", dim) for dim in shape)
        out += struct.pack("<BI", 4, count) + rng.randbytes(count)
    out += struct.pack("<I", 0)  # no aliases
    path.write_bytes(bytes(out[: len(out) - cut]))
    return path


def _string(text: str) -> bytes:
    data = text.encode() + b"\0"
    return struct.pack("<H", len(data)) + data


def write_fake_whisper(folder: Path, seed: int = 0, vocabulary: str = "vocabulary.txt") -> Path:
    """A folder shaped as ``Systran/faster-whisper-base`` is, with tiny files."""
    folder.mkdir(parents=True, exist_ok=True)
    write_model_bin(folder / "model.bin", seed=seed)
    (folder / "config.json").write_text(json.dumps(WHISPER_CONFIG))
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0}}}))
    (folder / vocabulary).write_text("a\nb\n")
    return folder


FAKE_PARAMETERS = sum(a * b for _, (a, b) in FAKE_VARIABLES)  # 640


@pytest.fixture
def whisper_folder(tmp_path) -> Path:
    return write_fake_whisper(tmp_path / "faster-whisper-base")


@pytest.fixture
def whisper_store(store, whisper_folder) -> Store:
    import_whisper_folder(store, "whisper:base", whisper_folder)
    return store


def _layer(name: object, digest: str = "a" * 64) -> dict[str, object]:
    return {
        "mediaType": LayerType.CT2.value,
        "digest": f"sha256:{digest}",
        "size": 1,
        "annotations": {"org.opencontainers.image.title": name},
    }


def _manifest_bytes(*layers: dict[str, object]) -> bytes:
    config = {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 2}
    config["digest"] = "sha256:" + "b" * 64
    return json.dumps({"schemaVersion": 2, "config": config, "layers": list(layers)}).encode()


# -- manifests -------------------------------------------------------------------------------
def test_a_file_layer_keeps_its_name_through_the_manifest():
    raw = _manifest_bytes(_layer("model.bin"), _layer("config.json", "c" * 64))
    manifest = Manifest.from_bytes(raw)
    assert [layer.file_name for layer in manifest.layers] == ["model.bin", "config.json"]
    assert manifest.is_transcription
    again = Manifest.from_bytes(manifest.to_bytes())
    assert again == manifest and again.model_id == manifest.model_id


@pytest.mark.parametrize(
    "name",
    [None, "", "../model.bin", "sub/model.bin", "..", ".hidden", "model.bin.", "a\\b", "NUL",
     "con.txt", "x" * 200, 7],
)  # fmt: skip
def test_a_file_name_that_is_not_a_plain_name_is_refused(name):
    layer = _layer(name)
    if name is None:
        del layer["annotations"]
    with pytest.raises(CorruptManifestError):
        Manifest.from_bytes(_manifest_bytes(layer))


def test_a_name_twice_is_refused_also_in_another_case():
    with pytest.raises(CorruptManifestError, match="twice"):
        Manifest.from_bytes(_manifest_bytes(_layer("model.bin"), _layer("model.bin", "c" * 64)))
    with pytest.raises(CorruptManifestError, match="twice"):
        Manifest.from_bytes(_manifest_bytes(_layer("model.bin"), _layer("Model.bin", "c" * 64)))


def test_only_file_layers_carry_a_name():
    digest = Digest("a" * 64)
    with pytest.raises(CorruptManifestError):
        Layer(LayerType.MODEL, digest, 1, file_name="model.bin")
    gguf = _layer("model.gguf") | {"mediaType": LayerType.MODEL.value}
    manifest = Manifest.from_bytes(_manifest_bytes(gguf))  # another tool's annotation: ignored
    assert manifest.layers[0].file_name is None and not manifest.is_transcription


# -- importing a folder ----------------------------------------------------------------------
def test_a_folder_is_stored_one_blob_per_file(whisper_store, whisper_folder):
    manifest = whisper_store.read_manifest("whisper:base")
    names = [layer.file_name for layer in manifest.layers]
    assert names == ["config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]
    assert {layer.media_type for layer in manifest.layers} == {LayerType.CT2}
    for layer in manifest.layers:
        stored = whisper_store.blobs.path(layer.digest).read_bytes()
        assert stored == (whisper_folder / str(layer.file_name)).read_bytes()
    config = whisper_store.read_config(manifest)
    assert (config["model_format"], config["model_family"]) == ("ct2", "whisper")
    assert (config["parameter_count"], config["model_type"]) == (FAKE_PARAMETERS, "640")
    assert config["file_type"] == "F16" and config["transcription"]["languages"] == 3


def test_a_gguf_model_is_no_transcription_model(imported_store):
    assert not imported_store.read_manifest("tiny").is_transcription
    with pytest.raises(ModelKindError, match="not a transcription model"):
        imported_store.model_folder("tiny")


def test_a_vocabulary_in_json_and_a_preprocessor_config_are_kept(store, tmp_path):
    folder = write_fake_whisper(tmp_path / "turbo", vocabulary="vocabulary.json")
    (folder / "preprocessor_config.json").write_text('{"feature_size": 128}')
    (folder / "README.md").write_text("# not a model file")
    import_whisper_folder(store, "turbo", folder)
    names = {layer.file_name for layer in store.read_manifest("turbo").layers}
    assert names == {
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.json",
        "preprocessor_config.json",
    }


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "model.bin").unlink(), "it has no model.bin"),
        (lambda f: (f / "tokenizer.json").unlink(), "it has no tokenizer.json"),
        (lambda f: (f / "vocabulary.txt").unlink(), r"no vocabulary\.txt \(or vocabulary\.json\)"),
        (lambda f: (f / "config.json").write_text('{"d_model": 512}'), "not describe a Whisper"),
        (lambda f: (f / "config.json").write_text("[1"), "not valid JSON"),
        (lambda f: write_model_bin(f / "model.bin", spec="TransformerSpec"), "TransformerSpec"),
        (lambda f: write_model_bin(f / "model.bin", cut=100), "truncated"),
    ],
)
def test_a_folder_that_is_no_whisper_model_says_what_is_missing(
    store, whisper_folder, damage, message
):
    damage(whisper_folder)
    with pytest.raises(ModelKindError, match=message):
        import_whisper_folder(store, "whisper:base", whisper_folder)
    assert not store.list_models() and not list(store.blobs.committed())


def test_a_linked_import_shares_the_files_inodes(store, whisper_folder):
    import_whisper_folder(store, "w", whisper_folder, FileEvents(mode="link"))
    for layer in store.read_manifest("w").layers:
        blob = store.blobs.path(layer.digest)
        assert os.path.samefile(blob, whisper_folder / str(layer.file_name))


# -- the runner's folder ---------------------------------------------------------------------
def test_the_folder_holds_hard_links_to_the_blobs_under_their_names(whisper_store):
    folder = whisper_store.model_folder("whisper:base")
    manifest = whisper_store.read_manifest("whisper:base")
    assert folder == whisper_store.root / "folders" / manifest.model_id.filename
    assert sorted(os.listdir(folder)) == sorted(str(x.file_name) for x in manifest.layers)
    for layer in manifest.layers:
        assert os.path.samefile(
            folder / str(layer.file_name), whisper_store.blobs.path(layer.digest)
        )
    made = os.stat(folder).st_ino
    assert whisper_store.model_folder("whisper:base") == folder
    assert os.stat(folder).st_ino == made  # intact: not made again


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: (f / "model.bin").unlink(),
        lambda f: (f / "stray.txt").write_text("x"),
        lambda f: _replace_with(f / "config.json", b'{"other": 1}'),
        lambda f: (
            (f / "tokenizer.json").unlink() or (f / "tokenizer.json").symlink_to("/etc/hosts")
        ),
        lambda f: shutil.rmtree(f) or f.write_text("a file where the folder was"),
    ],
)
def test_a_damaged_folder_is_made_again(whisper_store, damage):
    folder = whisper_store.model_folder("whisper:base")
    damage(folder)
    assert whisper_store.model_folder("whisper:base") == folder
    manifest = whisper_store.read_manifest("whisper:base")
    assert sorted(os.listdir(folder)) == sorted(str(x.file_name) for x in manifest.layers)
    for layer in manifest.layers:
        assert os.path.samefile(
            folder / str(layer.file_name), whisper_store.blobs.path(layer.digest)
        )
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # nothing left aside


def _replace_with(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def test_where_links_cannot_be_made_the_folder_is_copied_and_still_checked(
    tmp_path, whisper_folder
):
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system here")
    store = Store(tmp_path / "store")
    import_whisper_folder(store, "whisper:base", whisper_folder)
    with _folder_elsewhere(store, other):
        folder = store.model_folder("whisper:base")
        model = folder / "model.bin"
        assert model.read_bytes() == (whisper_folder / "model.bin").read_bytes()
        assert not os.path.samefile(model, store.blobs.path(_digest_of(store, "model.bin")))
        with model.open("r+b") as stream:  # changed in place, same size
            stream.write(b"\xff\xff")
        store.model_folder("whisper:base")
        assert model.read_bytes() == (whisper_folder / "model.bin").read_bytes()


def _digest_of(store: Store, file_name: str) -> Digest:
    manifest = store.read_manifest("whisper:base")
    return next(x.digest for x in manifest.layers if x.file_name == file_name)


class _folder_elsewhere:
    """The store's folders on another file system (a link from the store to it)."""

    def __init__(self, store: Store, where: Path):
        self._temp = tempfile.TemporaryDirectory(dir=where)
        self._link = store.layout.folders_dir

    def __enter__(self) -> None:
        self._link.symlink_to(self._temp.name, target_is_directory=True)

    def __exit__(self, *exc: object) -> None:
        self._link.unlink()
        self._temp.cleanup()


def test_a_missing_blob_is_said_not_papered_over(whisper_store):
    whisper_store.blobs.delete(_digest_of(whisper_store, "tokenizer.json"))
    with pytest.raises(BlobNotFoundError):
        whisper_store.model_folder("whisper:base")
    report = whisper_store.verify()
    assert list(report.missing.values()) == [(parse_name("whisper:base"),)]


def test_unknown_names_are_not_found(store):
    with pytest.raises(ModelNotFoundError):
        store.model_folder("whisper:none")


# -- cp, rm, prune, verify -------------------------------------------------------------------
def test_copies_share_one_folder_that_outlives_one_of_them(whisper_store):
    whisper_store.copy("whisper:base", "mine")
    folder = whisper_store.model_folder("whisper:base")
    assert whisper_store.model_folder("mine") == folder
    whisper_store.remove("whisper:base")
    assert folder.is_dir() and whisper_store.model_folder("mine") == folder
    whisper_store.remove("mine")
    assert not folder.exists() and not list(whisper_store.blobs.committed())


def test_rm_frees_the_space_the_folder_shared(whisper_store, whisper_folder):
    folder = whisper_store.model_folder("whisper:base")
    blob = whisper_store.blobs.path(_digest_of(whisper_store, "model.bin"))
    assert os.stat(blob).st_nlink == 2  # the blob and its name in the folder
    report = whisper_store.remove("whisper:base")
    assert not folder.exists()
    expected = sum(f.stat().st_size for f in whisper_folder.iterdir())
    assert report.freed_bytes > expected  # every file, and the config blob


def test_prune_removes_folders_of_gone_models_and_killed_builds(whisper_store):
    folder = whisper_store.model_folder("whisper:base")
    stale = folder.parent / ".tmp-999999999-dead"  # a build whose process is gone
    stale.mkdir()
    orphan = folder.parent / Digest("d" * 64).filename  # a model re-pulled under its name
    orphan.mkdir()
    (folder.parent / "not-ours").mkdir()
    whisper_store.prune()
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([folder.name, "not-ours"])


def test_prune_keeps_every_folder_while_a_manifest_is_unreadable(whisper_store):
    folder = whisper_store.model_folder("whisper:base")
    orphan = folder.parent / Digest("d" * 64).filename
    orphan.mkdir()
    broken = whisper_store.layout.manifest_path(parse_name("broken"))
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("{")
    assert whisper_store.prune().skipped_reason
    assert orphan.is_dir() and folder.is_dir()


def test_verify_checks_a_transcription_models_blobs(whisper_store):
    assert whisper_store.verify().ok
    path = whisper_store.blobs.path(_digest_of(whisper_store, "config.json"))
    path.write_bytes(b"{}")
    assert list(whisper_store.verify().corrupt.values()) == [(parse_name("whisper:base"),)]


def test_a_modelfile_cannot_build_on_a_transcription_model(whisper_store):
    modelfile = parse_modelfile("FROM whisper:base\nSYSTEM hello\n")
    with pytest.raises(ModelfileError, match="transcription model"):
        create_from_modelfile(whisper_store, "derived", modelfile, lambda ref: Path(ref))


def test_the_daemons_create_refuses_a_transcription_base_with_a_draft(
    whisper_store, tiny_model_path
):
    """Checked before anything runs (it once failed with an IndexError: a 500)."""
    from localllm.daemon.models.create import check_create

    import_gguf(whisper_store, "tiny", tiny_model_path)
    modelfile = parse_modelfile("FROM whisper:base\nDRAFT tiny\n")
    with pytest.raises(ModelfileError, match="transcription model"):
        check_create(whisper_store, modelfile, lambda ref: Path(ref), None)


def test_the_folder_and_gguf_models_live_side_by_side(whisper_store, tiny_model_path):
    import_gguf(whisper_store, "tiny", tiny_model_path)
    whisper_store.model_folder("whisper:base")
    whisper_store.remove("tiny")
    assert whisper_store.model_folder("whisper:base").is_dir()
    assert whisper_store.verify().ok


@pytest.mark.slow
def test_the_real_whisper_base_loads_from_its_store_folder(store):
    """faster-whisper (the runner's engine) reads the folder the store makes."""
    from faster_whisper import WhisperModel

    from tests.support.real_whisper import whisper_base_path

    import_whisper_folder(store, "whisper:base", whisper_base_path(), FileEvents(mode="auto"))
    config = store.read_config(store.read_manifest("whisper:base"))
    assert (config["model_type"], config["file_type"]) == ("72.6M", "F16")
    model = WhisperModel(str(store.model_folder("whisper:base")), device="cpu", compute_type="int8")
    assert model.model.is_multilingual
