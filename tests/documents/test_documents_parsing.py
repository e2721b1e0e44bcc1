"""Each parser on a file the test writes, and a damaged file is an error for that file only."""

from __future__ import annotations

import pytest

from localllm.app.documents.errors import DocumentError, UnsupportedDocument
from localllm.app.documents.parsing import parse
from tests.documents.files import CORPUS, write_docx, write_pdf


def test_pdf_pages_keep_their_numbers(tmp_path):
    path = write_pdf(tmp_path / "report.pdf", ["Alpha page one", "Beta page two\nsecond line"])
    sections = parse(path)
    assert [s.page for s in sections] == [1, 2]
    assert "Alpha page one" in sections[0].text
    assert "Beta page two" in sections[1].text and "second line" in sections[1].text


def test_docx_paragraphs_are_lines(tmp_path):
    path = write_docx(tmp_path / "memo.docx", ["First paragraph.", "Quarterly figures rose."])
    (section,) = parse(path)
    assert section.text.splitlines() == ["First paragraph.", "Quarterly figures rose."]
    assert section.page is None


def test_html_drops_scripts_and_styles(tmp_path):
    path = tmp_path / "chess.html"
    path.write_text(CORPUS["chess.html"])
    (section,) = parse(path)
    assert "Sicilian Defence" in section.text and "Chess openings" in section.text
    assert "var x" not in section.text and "color:red" not in section.text


@pytest.mark.parametrize("name", ["notes.md", "plain.txt", "sorter.py", "main.rs"])
def test_markdown_text_and_code_are_read_as_they_are(tmp_path, name):
    path = tmp_path / name
    path.write_text("line one\n  indented line two\n")
    (section,) = parse(path)
    assert section.text == "line one\n  indented line two\n"


def test_a_truncated_pdf_is_a_document_error_naming_only_the_file(tmp_path):
    good = write_pdf(tmp_path / "full.pdf", ["Some text"] * 3)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(good.read_bytes()[:200])
    with pytest.raises(DocumentError) as caught:
        parse(broken)
    assert "broken.pdf" in str(caught.value) and str(tmp_path) not in str(caught.value)


def test_a_docx_that_is_not_a_zip_is_a_document_error(tmp_path):
    path = tmp_path / "fake.docx"
    path.write_text("not a zip archive")
    with pytest.raises(DocumentError, match=r"fake\.docx"):
        parse(path)


def test_binary_data_under_a_text_name_is_refused(tmp_path):
    path = tmp_path / "blob.txt"
    path.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(DocumentError, match="binary"):
        parse(path)


def test_an_unknown_type_says_what_is_read(tmp_path):
    path = tmp_path / "movie.mp4"
    path.write_bytes(b"....")
    with pytest.raises(UnsupportedDocument, match=r"\.pdf"):
        parse(path)
