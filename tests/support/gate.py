"""Hold a function's calls until the test lets them through, to act while that work is under way.

A test that asks "does the daemon answer others while it counts this body (renders this
template)?" cannot race a few hundred milliseconds of work against a busy machine. With the work
held at its start, the answer is certain: the daemon answers, or the event loop is the thread
held at the gate and nothing is answered until the gate opens.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Gate"]


class Gate:
    """``gate.wrap(function)`` is ``function`` held at its start until ``open()``;
    ``entered`` is set once a call has reached the gate."""

    def __init__(self, guard: float = 120.0):
        self.entered = threading.Event()
        self._open = threading.Event()
        self._guard = guard  # a held call goes on by itself after this, should a test forget

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def held(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            self._open.wait(self._guard)
            return function(*args, **kwargs)

        return held

    def open(self) -> None:
        self._open.set()
