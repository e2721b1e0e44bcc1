"""Typed reads of the parts ``create_app`` keeps on ``app.state``.

Starlette's ``State`` holds anything, so a route that reads a part from it gets no type; this
one read checks the part is what the route expects, so the rest of the route is type-checked.
"""

from __future__ import annotations

from typing import TypeVar

from starlette.requests import HTTPConnection

__all__ = ["app_part"]

Part = TypeVar("Part")


def app_part(request: HTTPConnection, name: str, kind: type[Part]) -> Part:
    """``app.state.<name>``, which must be a ``kind``; a ``TypeError`` names the mix-up."""
    part: object = getattr(request.app.state, name)
    if not isinstance(part, kind):
        raise TypeError(f"app.state.{name} is a {type(part).__name__}, not a {kind.__name__}")
    return part
