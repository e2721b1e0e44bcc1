"""Finding the files a Modelfile names, hashing them, and uploading only missing blobs."""

from __future__ import annotations

import hashlib
import io

import pytest

from app.cli.errors import CliError
from app.cli.modelfile_files import referenced_files, sha256_file, upload_referenced
from app.cli.progress import ProgressBoard
from tests.support.cli import FakeClient


@pytest.fixture
def project(tmp_path):
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "model.gguf").write_bytes(b"GGUF" + b"x" * 3_000_000)
    (tmp_path / "lora.gguf").write_bytes(b"GGUF adapter")
    return tmp_path


def test_paths_resolve_against_the_modelfiles_folder(project, tmp_path_factory):
    text = "FROM ./weights/model.gguf\nADAPTER lora.gguf\nPARAMETER temperature 0.2\n"
    files = referenced_files(text, project)
    assert [(f.reference, f.path) for f in files] == [
        ("./weights/model.gguf", project / "weights" / "model.gguf"),
        ("lora.gguf", project / "lora.gguf"),
    ]


def test_a_model_name_is_not_a_file(project):
    assert referenced_files("FROM qwen2.5:0.5b\nSYSTEM hi\n", project) == []


def test_absolute_paths_and_repeats(project):
    path = project / "lora.gguf"
    files = referenced_files(f"FROM {path}\nADAPTER {path}\n", project)
    assert [f.path for f in files] == [path]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FROM ./missing.gguf\n", "./missing.gguf does not exist"),
        ("FROM ./weights\n", "./weights is a folder"),
        ("PARAMETER temperature 1\n", "needs a FROM line"),
        ("FROM x\nPARAMETER warmth 1\n", "line 2: unknown parameter"),
    ],
)
def test_errors(project, text, message):
    with pytest.raises(CliError, match=message):
        referenced_files(text, project)


def test_sha256_streams_and_reports_progress(project):
    path = project / "weights" / "model.gguf"
    seen = []
    digest = sha256_file(path, seen.append)
    assert digest == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert seen[-1] == path.stat().st_size and len(seen) == 3  # 1 MiB chunks


def test_only_missing_blobs_are_uploaded(project):
    text = "FROM ./weights/model.gguf\nADAPTER ./lora.gguf\n"
    files = referenced_files(text, project)
    lora = "sha256:" + hashlib.sha256((project / "lora.gguf").read_bytes()).hexdigest()
    client = FakeClient(blobs={lora})
    stream = io.StringIO()
    digests = upload_referenced(client, files, ProgressBoard(stream, tty=False))
    assert digests["./lora.gguf"] == lora
    uploads = [call for call in client.calls if call[0] == "upload_blob"]
    assert uploads == [("upload_blob", "model.gguf", digests["./weights/model.gguf"])]
    lines = stream.getvalue().splitlines()
    assert any(line.startswith("hashing model.gguf  100%") for line in lines)
    assert any(line.startswith("copying model.gguf  100%") for line in lines)
    assert not any(line.startswith("copying lora.gguf") for line in lines)
