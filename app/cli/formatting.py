"""How the CLI writes numbers, times and tables: Ollama's spellings, so output reads the same.

Sizes use decimal units ("4.7 GB"), durations Go's style ("1.25s", "20.5ms"), times relative
to now ("2 weeks ago", "4 minutes from now"). Everything here is a pure function of its
arguments (``now`` is passed in), so tests pin the exact text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

__all__ = [
    "format_clock",
    "format_duration",
    "format_rate",
    "format_size",
    "format_until",
    "parse_time",
    "relative_time",
    "short_id",
    "table",
]

_UNITS = (("TB", 1000**4), ("GB", 1000**3), ("MB", 1000**2), ("KB", 1000))
_FOREVER_YEARS = 100  # an expiry this far out means "kept loaded forever"


def format_size(count: int | float | None) -> str:
    """``4.7 GB``, ``397 MB``, ``68 B`` (decimal units, one decimal below ten)."""
    if count is None:
        return "-"
    count = max(0, int(count))
    for unit, scale in _UNITS:
        if count >= scale:
            value = count / scale
            if value >= 10 or value == int(value):
                return f"{int(value)} {unit}"
            return f"{value:.1f} {unit}"
    return f"{count} B"


def format_rate(bytes_per_second: float | None) -> str:
    return "" if bytes_per_second is None else f"{format_size(bytes_per_second)}/s"


def format_duration(nanoseconds: int | float | None) -> str:
    """Go's ``time.Duration`` style, to about four significant digits: ``1m2.5s``, ``20.5ms``."""
    if nanoseconds is None:
        return "-"
    ns = float(nanoseconds)
    if ns >= 60e9:
        minutes, seconds = divmod(ns / 1e9, 60)
        hours, minutes = divmod(int(minutes), 60)
        head = f"{hours}h{minutes}m" if hours else f"{minutes}m"
        return head + _trim(f"{seconds:.1f}") + "s"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return _trim(f"{ns / scale:.{_decimals(ns / scale)}f}") + unit
    return f"{int(ns)}ns"


def format_clock(seconds: float | None) -> str:
    """A countdown for progress bars: ``45s``, ``1m30s``, ``2h3m``."""
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _decimals(value: float) -> int:
    return 0 if value >= 1000 else 1 if value >= 100 else 2 if value >= 10 else 3


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp from the daemon (any fraction, ``Z`` or offset), or None."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def relative_time(when: datetime | None, now: datetime) -> str:
    """``About a minute ago``, ``3 days ago``, ``4 minutes from now``."""
    if when is None:
        return "-"
    seconds = (when - now).total_seconds()
    suffix = "from now" if seconds > 0 else "ago"
    seconds = abs(seconds)
    if seconds < 1:
        return f"Less than a second {suffix}"
    for limit, about, scale, unit in _STEPS:
        if seconds < limit:
            count = int(seconds // scale)
            if about and count <= 1:
                return f"{about} {suffix}"
            return f"{count} {unit}{'' if count == 1 else 's'} {suffix}"
    return f"{int(seconds // (365 * 86400))} years {suffix}"


_STEPS = (  # (below this many seconds, the "about" word, unit length, unit name)
    (60, None, 1, "second"),
    (120, "About a minute", 60, "minute"),
    (3600, None, 60, "minute"),
    (7200, "About an hour", 3600, "hour"),
    (2 * 86400, None, 3600, "hour"),
    (14 * 86400, None, 86400, "day"),
    (60 * 86400, None, 7 * 86400, "week"),
    (730 * 86400, None, 30 * 86400, "month"),
)


def format_until(expires_at: str | None, now: datetime) -> str:
    """The UNTIL column of ``ps``: when a loaded model will be unloaded."""
    when = parse_time(expires_at)
    if when is None or when.year - now.year >= _FOREVER_YEARS:
        return "Forever"
    if when <= now:
        return "Stopping..."
    return relative_time(when, now)


def short_id(digest: str | None) -> str:
    """The 12-hex-digit id Ollama shows for a digest (``sha256:`` or ``sha256-`` prefixed)."""
    if not digest:
        return "-"
    return digest.split(":", 1)[-1].removeprefix("sha256-")[:12]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], gap: int = 4) -> str:
    """Left-aligned columns separated by at least ``gap`` spaces; the last is not padded."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(width + gap) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append(("".join(padded) + row[-1]).rstrip())
    return "\n".join(lines)
