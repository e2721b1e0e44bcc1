"""Work counted, not timed: how many lines of a module's code a call executes.

Whether a construct is linear is a question about work, not about seconds: a loaded 2-core
machine times a linear pass like a quadratic one. Line events are the same from run to run
for the same input, so a test can compare the work at N and at 4N exactly (linear: about 4x;
quadratic: about 16x). Time belongs in ``bench/hostile_inputs.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

__all__ = ["lines_run"]


def lines_run(call: Callable[[], Any], *modules: ModuleType) -> int:
    """The lines of ``modules`` that ``call()`` runs, in this thread."""
    files = {module.__file__ for module in modules}
    count = 0

    def in_frame(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return in_frame

    def on_call(frame: FrameType, event: str, arg: object) -> Any:
        return in_frame if frame.f_code.co_filename in files else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        call()
    finally:
        sys.settrace(previous)
    return count
