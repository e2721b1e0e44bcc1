"""No module of the product over 450 lines: past that a module holds two concepts, and it is
split where they part (see ARCHITECTURE.md), not cut for length."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("app", "daemon", "model_registry")
LIMIT = 450


def test_no_module_is_over_the_limit():
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
    }
    assert len(sizes) > 400, "the product's modules were not found"
    assert {name: lines for name, lines in sizes.items() if lines > LIMIT} == {}
