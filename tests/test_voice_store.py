"""Piper voices in the store, as Whisper models are: the two files (``<voice>.onnx`` and its
``.onnx.json``) one blob each, their names kept in ``LayerType.VOICE`` layers, a folder of hard
links made for the speech runner, ``rm`` deleting it; imported from a folder or either file,
checked first; refused with a clear error where a GGUF is needed. A tiny fake ``.onnx`` beside
the real voice's ``.onnx.json`` stands in where no voice is spoken."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.resolve import resolve_model
from localllm.model_registry.errors import ModelfileError, ModelKindError
from localllm.model_registry.importer import FileEvents, create_from_modelfile, import_gguf
from localllm.model_registry.local_models import add_found_model, describe_voice
from localllm.model_registry.local_models.naming import name_for_voice
from localllm.model_registry.modelfile import parse_modelfile
from localllm.model_registry.store import LayerType, Manifest, Store
from localllm.model_registry.voice import import_voice
from tests.support.real_voice import JOE_RATE, joe_voice_path

JOE = "en_US-joe-medium"
FILES = [f"{JOE}.onnx", f"{JOE}.onnx.json"]


def write_fake_voice(folder: Path, name: str = JOE) -> Path:
    """A folder shaped as a ``rhasspy/piper-voices`` one: a (tiny, fake) ONNX file, the real
    voice's ``.onnx.json`` and a model card."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.onnx").write_bytes(b"\x08\x07\x12\x04fake" * 64)
    shutil.copyfile(joe_voice_path() / f"{JOE}.onnx.json", folder / f"{name}.onnx.json")
    (folder / "MODEL_CARD").write_text("# joe (medium)\n")
    return folder


@pytest.fixture
def voice_folder(tmp_path) -> Path:
    return write_fake_voice(tmp_path / "joe")


@pytest.fixture
def voice_store(store, voice_folder) -> Store:
    import_voice(store, "voice:joe", voice_folder)
    return store


def test_a_voice_is_stored_one_blob_per_file_with_its_facts_in_the_config(
    voice_store, voice_folder
):
    manifest = voice_store.read_manifest("voice:joe")
    assert [layer.file_name for layer in manifest.layers] == FILES  # not the model card
    assert {layer.media_type for layer in manifest.layers} == {LayerType.VOICE}
    assert manifest.is_voice and not manifest.is_transcription
    assert manifest.folder_layers == manifest.layers
    for layer in manifest.layers:
        stored = voice_store.blobs.path(layer.digest).read_bytes()
        assert stored == (voice_folder / str(layer.file_name)).read_bytes()
    again = Manifest.from_bytes(manifest.to_bytes())
    assert again == manifest and again.model_id == manifest.model_id
    config = voice_store.read_config(manifest)
    assert (config["model_format"], config["model_family"], config["model_type"]) == (
        "onnx",
        "piper",
        "medium",
    )
    assert config["voice"] == {
        "engine": "piper",
        "sample_rate": JOE_RATE,
        "language": "en_US",
        "quality": "medium",
        "speakers": 1,
        "phoneme_type": "espeak",
        "espeak_voice": "en-us",
    }


def test_either_file_names_the_same_voice(store, voice_folder):
    ids = {
        import_voice(store, f"voice:{n}", path)
        for n, path in enumerate((voice_folder, *(voice_folder / name for name in FILES)))
    }
    assert len(ids) == 1


def test_the_runners_folder_holds_both_files_under_their_names(voice_store):
    folder = voice_store.model_folder("voice:joe", LayerType.VOICE)
    assert sorted(os.listdir(folder)) == FILES
    manifest = voice_store.read_manifest("voice:joe")
    for layer in manifest.layers:
        assert os.path.samefile(folder / str(layer.file_name), voice_store.blobs.path(layer.digest))
    voice_store.remove("voice:joe")
    assert not folder.exists() and not list(voice_store.blobs.committed())


def test_a_voice_is_no_transcription_model_nor_a_gguf_a_voice(voice_store, tiny_model_path):
    """Each runner asks for its kind's folder: Whisper's route gets no voice's, and back."""
    with pytest.raises(ModelKindError, match="voice:joe is not a transcription model"):
        voice_store.model_folder("voice:joe")
    import_gguf(voice_store, "tiny", tiny_model_path)
    with pytest.raises(ModelKindError, match=r"tiny is not a voice \(Piper"):
        voice_store.model_folder("tiny", LayerType.VOICE)


def test_a_linked_import_shares_the_files_inodes(store, voice_folder):
    import_voice(store, "voice:joe", voice_folder / FILES[0], FileEvents(mode="link"))
    for layer in store.read_manifest("voice:joe").layers:
        assert os.path.samefile(store.blobs.path(layer.digest), voice_folder / str(layer.file_name))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / f"{JOE}.onnx.json").unlink(), r"has no en_US-joe-medium\.onnx\.json"),
        (lambda f: (f / f"{JOE}.onnx").unlink(), r"no <voice>\.onnx and \.onnx\.json"),
        (lambda f: write_fake_voice(f, "en_US-amy-low"), "holds 2 Piper voices"),
        (lambda f: (f / f"{JOE}.onnx.json").write_text("[1"), "not valid JSON"),
        (lambda f: (f / f"{JOE}.onnx.json").write_text('{"audio": {}}'), "no audio sample_rate"),
        (
            lambda f: (f / f"{JOE}.onnx.json").write_text('{"audio": {"sample_rate": 22050}}'),
            "no phoneme_id_map",
        ),
        (lambda f: (f / f"{JOE}.onnx").write_text("<html>not found</html>"), "not an ONNX model"),
    ],
)
def test_a_folder_that_is_no_voice_says_what_is_missing(store, voice_folder, damage, message):
    damage(voice_folder)
    with pytest.raises(ModelKindError, match=message):
        import_voice(store, "voice:joe", voice_folder)
    assert not store.list_models() and not list(store.blobs.committed())


def test_a_file_whose_partner_is_missing_is_refused(store, voice_folder):
    (voice_folder / f"{JOE}.onnx").unlink()
    with pytest.raises(ModelKindError, match=r"en_US-joe-medium\.onnx is not beside it"):
        import_voice(store, "voice:joe", voice_folder / f"{JOE}.onnx.json")
    with pytest.raises(ModelKindError, match="not a Piper voice"):
        import_voice(store, "voice:joe", voice_folder / "MODEL_CARD")


def test_gguf_paths_refuse_a_voice_with_a_clear_error(voice_store):
    with pytest.raises(BadRequestError, match=r"voice:joe is a voice .*/v1/audio/speech"):
        resolve_model(voice_store, "voice:joe")
    modelfile = parse_modelfile("FROM voice:joe\nSYSTEM hi\n")
    with pytest.raises(ModelfileError, match="that is a voice"):
        create_from_modelfile(voice_store, "mine", modelfile, lambda reference: Path(reference))


def test_a_found_voice_is_named_after_its_file_and_added(store, voice_folder):
    found = describe_voice(voice_folder / FILES[0], store)
    assert (found.name, found.format, found.architecture) == ("voice:joe", "voice", "piper")
    assert found.files == tuple(voice_folder / name for name in FILES) and not found.in_store
    report = add_found_model(store, found)
    assert report.name == "voice:joe" and store.read_manifest("voice:joe").is_voice
    assert describe_voice(voice_folder, store).in_store  # remembered by the import memo
    assert [name_for_voice(n) for n in ("en_US-lessac-low.onnx", "de_DE-thorsten-high.onnx")] == [
        "voice:lessac-low",
        "voice:thorsten-high",
    ]


def test_the_real_voice_imports_and_its_folder_loads_in_piper(store):
    """The real voice (63 MB) through the store: the folder the runner is given is one Piper
    reads (its config, at least: loading the graph is the runner tests')."""
    import_voice(store, "voice:joe", joe_voice_path())
    folder = store.model_folder("voice:joe", LayerType.VOICE)
    config = json.loads((folder / f"{JOE}.onnx.json").read_text())
    assert config["audio"]["sample_rate"] == JOE_RATE
    assert (folder / f"{JOE}.onnx").stat().st_size == (joe_voice_path() / FILES[0]).stat().st_size
