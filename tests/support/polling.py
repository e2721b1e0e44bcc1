"""The one way tests wait for something another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_for"]


def wait_for(
    predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.02
) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass; its last answer.

    Returns instead of raising so a test says what it waited for: ``assert wait_for(...), why``.
    ``timeout`` only bounds a failure: it is no measure of how quick anything is, and is far
    past what a busy machine needs.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
