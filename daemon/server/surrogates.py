"""Finding a lone surrogate in a JSON body before a route takes it.

JSON may escape half of a UTF-16 surrogate pair (``"\\ud800"``), and Python's ``json`` reads
bytes with ``surrogatepass``, so such a string gets into a request as a ``str`` that is not
Unicode text: it fails later, when something encodes it (a prompt for the runner, a stored
blob, an answer that echoes it), often after a whole generation, as a 500. Escaped pairs
(``"\\ud83d\\ude00"``, an emoji as ``ensure_ascii`` writes it) are text and pass. Only a body
that holds a surrogate escape or its raw bytes is parsed here (in a worker thread, by the
caller), to name where the lone one is.
"""

from __future__ import annotations

import json
import re

__all__ = ["lone_surrogate_at", "may_hold_surrogates"]

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def may_hold_surrogates(body: bytes) -> bool:
    """A quick look: False means ``body`` holds no surrogate at all."""
    return _SURROGATE.search(body) is not None


def lone_surrogate_at(body: bytes) -> str | None:
    """Where the first string holding a lone surrogate is (``messages.0.content``; ``""`` for
    the whole body), or None when there is none (or the body is not JSON: the route says so)."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    pending: list[tuple[object, str]] = [(value, "")]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            if _is_lone(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                shown = key.encode(errors="backslashreplace").decode()  # a key may be one too
                path = f"{where}.{shown}" if where else shown
                pending.append((key, path))
                pending.append((child, path))
        elif isinstance(item, list):
            pending.extend(
                (child, f"{where}.{n}" if where else str(n)) for n, child in enumerate(item)
            )
    return None


def _is_lone(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False
