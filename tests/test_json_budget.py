"""Counting a JSON body's values without parsing it (``daemon.server.json_budget``)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from localllm.daemon.server.json_budget import json_separators

# Text with everything that could fool a count: quotes, backslash runs, commas and colons.
tricky = st.text(st.sampled_from(['"', "\\", ",", ":", "a", "é", "{", "[", " "]), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | tricky,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky, inner, max_size=4),
    max_leaves=20,
)


def separators(value: object) -> int:
    """What the count must be: a colon per key, a comma between neighbours."""
    if isinstance(value, dict):
        inner = sum(separators(v) for v in value.values())
        return 2 * len(value) - 1 + inner if value else 0
    if isinstance(value, list):
        return max(len(value) - 1, 0) + sum(separators(v) for v in value)
    return 0


@settings(max_examples=300)
@given(value=values, ascii_only=st.booleans(), compact=st.booleans())
def test_separators_are_counted_outside_strings_only(value, ascii_only, compact):
    spacing = (",", ":") if compact else (", ", ": ")
    body = json.dumps(value, ensure_ascii=ascii_only, separators=spacing).encode()
    assert json_separators(body) == separators(value)


def test_escaped_quotes_and_backslash_runs():
    assert json_separators(rb'{"a\\":":,","b":[1,2]}') == 4
    assert json_separators(rb'["\\\\",1,"\\\"",2]') == 3
