"""The chat list's sections by when a chat was last used: Today, Yesterday, Previous 7 days,
Previous 30 days, then one per month ("October 2026"), as ChatGPT and LM Studio group them."""

from __future__ import annotations

from datetime import datetime

__all__ = ["day_group"]


def day_group(used_at: float, now: float) -> str:
    """The section a chat last used at ``used_at`` belongs to, seen at ``now`` (local time)."""
    used, today = datetime.fromtimestamp(used_at).date(), datetime.fromtimestamp(now).date()
    days = (today - used).days
    if days <= 0:
        return "Today"
    if days == 1:
        return "Yesterday"
    if days <= 7:
        return "Previous 7 days"
    if days <= 30:
        return "Previous 30 days"
    return f"{used:%B %Y}"
