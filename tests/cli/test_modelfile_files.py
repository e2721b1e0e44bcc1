"""Finding the files a Modelfile names, hashing them, and uploading only missing blobs."""

from __future__ import annotations

import hashlib
import io
import shutil

import pytest

from localllm.app.cli.errors import CliError
from localllm.app.cli.modelfile_files import (
    check_adapters,
    referenced_files,
    sha256_file,
    upload_referenced,
)
from localllm.app.cli.progress import ProgressBoard
from tests.support.adapters import NOT_ADAPTERS, not_an_adapter
from tests.support.cli import FakeClient
from tests.support.model_writers.lora import write_tiny_lora


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
    assert referenced_files("FROM qwen2.5:7b\nDRAFT qwen2.5:0.5b\n", project) == []


def test_a_draft_file_is_uploaded_too(project):
    files = referenced_files("FROM qwen2.5:7b\nDRAFT ./lora.gguf\n", project)
    assert [(f.reference, f.path, f.instruction) for f in files] == [
        ("./lora.gguf", project / "lora.gguf", "DRAFT")
    ]


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


def test_files_outside_the_modelfiles_folder_are_marked(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "key").write_bytes(b"secret")
    (project / "link.gguf").symlink_to(elsewhere / "key")  # a link inside leads out
    text = f"FROM ./weights/model.gguf\nADAPTER ./lora.gguf\nADAPTER {elsewhere}/key\n"
    text += "ADAPTER ./link.gguf\n"
    files = referenced_files(text, project)
    assert [(f.instruction, f.name, f.outside) for f in files] == [
        ("FROM", "model.gguf", False),
        ("ADAPTER", "lora.gguf", False),
        ("ADAPTER", "key", True),
        ("ADAPTER", "link.gguf", True),
    ]


@pytest.mark.parametrize(("source", "asked"), [("FROM ./base.gguf", []), ("FROM tiny", ["tiny"])])
def test_a_lora_adapter_for_the_base_passes(tmp_path, tiny_model_path, source, asked):
    shutil.copy(tiny_model_path, tmp_path / "base.gguf")
    write_tiny_lora(tmp_path / "lora.gguf", tiny_model_path)
    text = f"{source}\nADAPTER ./lora.gguf 0.5\n"
    seen: list[str] = []
    check_adapters(text, referenced_files(text, tmp_path), lambda n: seen.append(n) or "llama")
    assert seen == asked  # the daemon is asked about a store model only


@pytest.mark.parametrize("kind", NOT_ADAPTERS)
@pytest.mark.parametrize("source", ["FROM tiny", "FROM ./base.gguf"])
def test_what_is_not_a_lora_adapter_for_the_base_is_refused(
    tmp_path, tiny_model_path, kind, source
):
    shutil.copy(tiny_model_path, tmp_path / "base.gguf")
    path, message = not_an_adapter(kind, tmp_path, tiny_model_path)
    text = f"{source}\nADAPTER ./{path.name}\n"
    with pytest.raises(CliError) as caught:
        check_adapters(text, referenced_files(text, tmp_path), lambda name: "llama")
    assert str(caught.value).startswith(f"ADAPTER {message}")
    assert str(tmp_path) not in str(caught.value)
