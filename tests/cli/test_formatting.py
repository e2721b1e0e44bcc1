"""Sizes, durations, relative times and tables, spelled as Ollama spells them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from localllm.app.cli.formatting import (
    format_clock,
    format_duration,
    format_size,
    format_until,
    parse_time,
    relative_time,
    short_id,
    table,
)
from localllm.app.cli.show_view import format_parameter_count

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0 B"),
        (68, "68 B"),
        (1000, "1 KB"),
        (1500, "1.5 KB"),
        (397_000_000, "397 MB"),
        (4_683_073_184, "4.7 GB"),
        (12_300_000_000, "12 GB"),
        (2_000_000_000_000, "2 TB"),
        (None, "-"),
    ],
)
def test_format_size(count, text):
    assert format_size(count) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (1_234_567_891, "1.235s"),
        (20_500_000, "20.5ms"),
        (312_500, "312.5µs"),
        (999, "999ns"),
        (62_500_000_000, "1m2.5s"),
        (3_723_000_000_000, "1h2m3s"),
        (None, "-"),
    ],
)
def test_format_duration_is_go_style(ns, text):
    assert format_duration(ns) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0s"), (45, "45s"), (90, "1m30s"), (7380, "2h3m"), (None, ""), (-1, "")],
)
def test_format_clock(seconds, text):
    assert format_clock(seconds) == text


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=-0.5), "Less than a second ago"),
        (timedelta(seconds=-1), "1 second ago"),
        (timedelta(seconds=-30), "30 seconds ago"),
        (timedelta(seconds=-90), "About a minute ago"),
        (timedelta(minutes=-5), "5 minutes ago"),
        (timedelta(minutes=-70), "About an hour ago"),
        (timedelta(hours=-20), "20 hours ago"),
        (timedelta(days=-3), "3 days ago"),
        (timedelta(days=-21), "3 weeks ago"),
        (timedelta(days=-90), "3 months ago"),
        (timedelta(days=-1000), "2 years ago"),
        (timedelta(minutes=4, seconds=30), "4 minutes from now"),
    ],
)
def test_relative_time(delta, text):
    assert relative_time(NOW + delta, NOW) == text


def test_parse_time_accepts_go_timestamps():
    parsed = parse_time("2026-06-01T14:00:00.123456789+02:00")
    assert parsed == NOW.replace(microsecond=123456)
    assert parse_time("2026-06-01T12:00:00Z") == NOW
    assert parse_time("2026-06-01T12:00:00") == NOW  # no zone: UTC
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_format_until():
    assert format_until("2026-06-01T12:04:59Z", NOW) == "4 minutes from now"
    assert format_until("2026-06-01T11:59:00Z", NOW) == "Stopping..."
    assert format_until("2318-01-01T00:00:00Z", NOW) == "Forever"
    assert format_until(None, NOW) == "Forever"


def test_short_id_and_parameter_count():
    assert short_id("sha256:" + "0123456789abcdef" * 4) == "0123456789ab"
    assert short_id("sha256-" + "f" * 64) == "f" * 12
    assert short_id(None) == "-"
    assert format_parameter_count(8_030_261_248) == "8.0B"
    assert format_parameter_count(494_032_768) == "494M"
    assert format_parameter_count(None) == "-"


def test_table_aligns_columns_and_leaves_the_last_unpadded():
    text = table(["NAME", "ID", "SIZE"], [["qwen:7b", "abc", "4.7 GB"], ["a", "defghi", "1 B"]])
    assert text.splitlines() == [
        "NAME       ID        SIZE",
        "qwen:7b    abc       4.7 GB",
        "a          defghi    1 B",
    ]
    assert table(["NAME", "ID"], []) == "NAME    ID"
