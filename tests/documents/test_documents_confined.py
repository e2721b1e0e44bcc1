"""Documents stay inside the folder the user chose: links out of it are not followed, pipes and
devices are never opened for reading (a FIFO or /dev/zero used to hang the indexer for ever),
a file swapped for a link after the scan is refused, and a DOCX zip bomb or an oversized PDF
is an error for that file, before anything inflates or reads it whole."""

from __future__ import annotations

import os
import threading
import zipfile
from pathlib import Path

import pytest

from localllm.app.documents.errors import DocumentError
from localllm.app.documents.index import DocumentIndex
from localllm.app.documents.indexer import Indexer, IndexReport, scan
from localllm.app.documents.parsing import parse
from tests.documents.files import write_docx

SECRET = "BEGIN OPENSSH PRIVATE KEY the secret key material"


def _index(tmp_path: Path, *sources: Path) -> tuple[DocumentIndex, IndexReport]:
    """Index ``sources`` in a thread that must end: a reader stuck on a pipe fails the test
    instead of hanging the suite."""
    index = DocumentIndex(tmp_path / "index.sqlite3")
    reports: list[IndexReport] = []

    def run() -> None:
        *_, report = Indexer(index).run(list(sources))
        reports.append(report)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the indexer hung on a file"
    return index, reports[0]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    outside = tmp_path / "home" / ".ssh"
    outside.mkdir(parents=True)
    (outside / "id_rsa").write_text(SECRET)
    chosen = tmp_path / "chosen"
    (chosen / "sub").mkdir(parents=True)
    (chosen / "readme.md").write_text("The project readme talks about turbines.")
    (chosen / "sub" / "notes.txt").write_text("Notes about blades.")
    return chosen


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_links_out_of_the_folder_are_not_followed(tmp_path, folder):
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    (folder / "notes.md").symlink_to(secret)
    (folder / "keys").symlink_to(secret.parent, target_is_directory=True)
    index, report = _index(tmp_path, folder)
    assert sorted(Path(p).name for p in index.files()) == ["notes.txt", "readme.md"]
    assert index.keyword("OPENSSH PRIVATE KEY", 5) == []
    assert report.errors == ()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_in_the_folder_or_chosen_is_never_opened(tmp_path, folder):
    os.mkfifo(folder / "stream.txt")
    os.mkfifo(tmp_path / "chosen-pipe.md")
    index, _ = _index(tmp_path, folder, tmp_path / "chosen-pipe.md")
    assert sorted(Path(p).name for p in index.files()) == ["notes.txt", "readme.md"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_is_never_read(tmp_path):
    assert scan([Path("/dev/zero"), Path("/dev/null")]) == []


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_file_swapped_for_a_link_after_the_scan_is_refused(tmp_path, folder):
    target = folder / "readme.md"
    assert target.resolve() in scan([folder])  # found while it was a file...
    target.unlink()
    target.symlink_to(tmp_path / "home" / ".ssh" / "id_rsa")  # ...then swapped
    with pytest.raises(DocumentError, match=r"readme\.md: a link; only files inside the folder"):
        parse(target, folder.resolve())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_file_swapped_for_a_pipe_is_refused_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "late.txt")
    with pytest.raises(DocumentError, match=r"late\.txt: not a regular file"):
        parse(tmp_path / "late.txt", tmp_path.resolve())


def test_a_docx_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    bomb = write_docx(tmp_path / "bomb.docx", ["An ordinary first paragraph."])
    with (
        zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/zeros.bin", "w", force_zip64=True) as part,
    ):
        for _ in range(300):  # 300 MB of zeros: a few hundred KB once deflated
            part.write(bytes(1 << 20))
    assert bomb.stat().st_size < 2 << 20
    with pytest.raises(DocumentError, match=r"bomb\.docx: unpacks to more than 256 MB"):
        parse(bomb)
    _, report = _index(tmp_path, bomb)
    assert report.errors == ("bomb.docx: unpacks to more than 256 MB",)


def test_an_oversized_pdf_is_refused_unread(tmp_path):
    huge = tmp_path / "huge.pdf"
    with huge.open("wb") as handle:  # sparse: 200 MB that take no disk
        handle.truncate(200 << 20)
    with pytest.raises(DocumentError, match=r"huge\.pdf: larger than 128 MB"):
        parse(huge)


def test_ordinary_documents_are_still_read(tmp_path, folder):
    write_docx(folder / "memo.docx", ["Memo about the wind farm."])
    index, report = _index(tmp_path, folder)
    assert report.errors == () and report.indexed == 3
    (hit,) = index.passages(index.keyword("wind farm", 1))
    assert hit.name == "memo.docx"
