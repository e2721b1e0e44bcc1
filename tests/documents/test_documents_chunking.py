"""Passages overlap, stay within their size, and know exactly where they came from."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localllm.app.documents.chunking import chunk_sections
from localllm.app.documents.parsing import Section


def _lines(count: int) -> str:
    return "\n".join(
        f"Line number {n} says something about topic {n}." for n in range(1, count + 1)
    )


def test_citations_point_at_the_passage_text():
    text = _lines(60)
    chunks = chunk_sections([Section(text)], size=300, overlap=80)
    assert len(chunks) > 3
    lines = text.split("\n")
    for chunk in chunks:
        assert chunk.text == text[chunk.char_start : chunk.char_end]
        cited = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        assert chunk.text == cited
        assert len(chunk.text) <= 300


def test_neighbours_overlap_and_cover_everything():
    text = _lines(40)
    chunks = chunk_sections([Section(text)], size=250, overlap=60)
    for before, after in itertools.pairwise(chunks):
        assert after.char_start < before.char_end  # shared lines
        assert after.line_start > before.line_start  # and still moving on
    covered = {n for c in chunks for n in range(c.line_start, c.line_end + 1)}
    assert covered == set(range(1, 41))


def test_pdf_pages_are_chunked_apart_with_their_page():
    chunks = chunk_sections([Section("one\ntwo", page=1), Section("three", page=2)])
    assert [(c.page, c.text) for c in chunks] == [(1, "one\ntwo"), (2, "three")]


def test_a_line_longer_than_a_passage_is_cut():
    text = "short\n" + "x" * 1000
    chunks = chunk_sections([Section(text)], size=300, overlap=0)
    assert all(len(c.text) <= 300 for c in chunks)
    assert {c.line_start for c in chunks[1:]} == {2}
    assert "".join(c.text for c in chunks[1:]) == "x" * 1000


def test_blank_text_has_no_passages():
    assert chunk_sections([Section("\n \n\t\n")]) == []


def test_overlap_must_be_smaller_than_the_size():
    with pytest.raises(ValueError, match="overlap"):
        chunk_sections([Section("a")], size=10, overlap=10)


@given(st.text(alphabet="ab \n", max_size=600), st.integers(20, 120), st.integers(0, 19))
def test_any_text_chunks_into_its_own_slices(text, size, overlap):
    chunks = chunk_sections([Section(text)], size=size, overlap=overlap)
    for chunk in chunks:
        assert chunk.text == text[chunk.char_start : chunk.char_end]
        assert 0 < len(chunk.text) <= size
    words = {i for i, ch in enumerate(text) if ch not in " \n"}
    covered = {i for c in chunks for i in range(c.char_start, c.char_end)}
    assert words <= covered
