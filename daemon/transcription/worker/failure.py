"""A request the runner cannot serve, and why: raised where it is found, answered by the loop
as an ``error`` event of its ``kind`` while the runner goes on serving."""

from __future__ import annotations

from ...runners import child_loop
from ..frames import ErrorKind

__all__ = ["RequestFailure"]


class RequestFailure(child_loop.RequestFailure):
    def __init__(self, kind: ErrorKind, message: str):
        super().__init__(kind, message)
