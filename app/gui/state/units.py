"""Numbers as people read them: sizes, speeds, durations, times ago.

One place so every page says "4.4 GB" and "2 min left" the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["ago", "bytes_text", "duration_text", "rate_text"]

_UNITS = ("B", "KB", "MB", "GB", "TB")


def bytes_text(n: float) -> str:
    """Decimal units, like the hub and most file managers show them."""
    value = float(n)
    for unit in _UNITS:
        if abs(value) < 1000 or unit == _UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def rate_text(bytes_per_second: float) -> str:
    return f"{bytes_text(bytes_per_second)}/s"


def duration_text(seconds: float | None) -> str:
    """Short and rounded: "45 s", "3 min", "1 h 20 min"; "" when unknown."""
    if seconds is None or seconds < 0:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """ "just now", "5 minutes ago", "3 days ago", or the date when older than a month."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    for limit, size, unit in ((3600, 60, "minute"), (86400, 3600, "hour"), (2592000, 86400, "day")):
        if seconds < 60:
            return "just now"
        if seconds < limit:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return moment.date().isoformat()
