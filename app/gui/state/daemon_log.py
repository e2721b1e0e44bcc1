"""The daemon's log as the Server page shows it: without the app's own routine polling, by
default.

The app asks the daemon things every few seconds (is it up, what is loaded, the log itself);
those request lines would bury what the user came to read. Every request the app sends says
``User-Agent: localllm-app/<version>`` and the daemon's request log (one JSON object a line)
keeps that, but a header is only a claim: any program can send it. So a line is hidden only
when hiding it loses nothing: it claims to be the app's, it only read what the app reads on
its own (the status routes it polls, a model's details, the memory plans it shows beside
models and chat settings, the hub's lists) and it succeeded, or failed only because the hub
or a remote could not be reached (offline, the Discover page's dozen plans each fail, and
the page says so). A refusal or failure of the daemon's own (a 403 on ``POST /api/remotes``,
a 500), a change (any other POST, a PUT, PATCH or DELETE), any other route, and the app's
chats (their lines name the model and its timings) always show, whoever claims to have sent
them. Qt-free.
"""

from __future__ import annotations

import json
from importlib import metadata

__all__ = ["APP_AGENT", "app_user_agent", "is_app_polling", "readable", "visible_log"]

APP_AGENT = "localllm-app"
# what the app asks on its own, and nothing that answers with more than the daemon's state
_POLLED = (
    "/health",
    "/api/version",
    "/api/server",
    "/api/system",
    "/api/logs",
    "/api/ps",
    "/api/tags",
    "/api/pulls",
    "/api/remotes",
    "/api/local-models",
    "/api/hub/catalog",
    "/api/hub/search",  # Discover's lists (offline, each fails: the page says so)
    "/api/hub/files",
    "/api/prompt-cache",  # what it holds, each time the Settings page shows
)
_READS = frozenset(
    [(method, path) for method in ("GET", "HEAD") for path in _POLLED]
    + [("POST", "/api/show")]  # a model's details: a POST that only reads
    + [("POST", "/api/plan")]  # what a model would take at a chat's settings: loads nothing
)
_UNREACHABLE = 502  # the daemon could not reach the hub or a remote: the asking page says it


def app_user_agent() -> str:
    try:
        version = metadata.version("localllm")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"{APP_AGENT}/{version}"


def is_app_polling(line: str) -> bool:
    """Whether ``line`` is the daemon's record of the app checking on it: a read of a status
    route, sent as the app, that succeeded or found the internet out of reach (not a chat the
    user sent through it, nor a change, nor a request the daemon refused or failed)."""
    if not line.startswith("{") or APP_AGENT not in line:
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict) or "model" in record:  # a generation: the user's
        return False
    agent, status = record.get("user_agent"), record.get("status")
    request = (record.get("method"), record.get("path"))
    return (
        isinstance(agent, str)
        and agent.startswith(APP_AGENT + "/")
        and all(isinstance(part, str) for part in request)
        and request in _READS
        and isinstance(status, int)
        and not isinstance(status, bool)
        and (200 <= status < 400 or status == _UNREACHABLE)
    )


def visible_log(text: str, show_app_requests: bool = False, lines: int = 400) -> str:
    """The last ``lines`` lines of the log, the app's routine polling left out unless asked."""
    kept = text.splitlines()
    if not show_app_requests:
        kept = [line for line in kept if not is_app_polling(line)]
    return "\n".join(kept[-lines:])


def readable(line: str) -> str:
    """A request line as people read it ("POST /api/chat  200  812 ms  model gemma3"); any
    other line as it is."""
    if not line.startswith("{"):
        return line
    try:
        record = json.loads(line)
    except ValueError:
        return line
    if not isinstance(record, dict) or "path" not in record:
        return line
    head = f"{record.get('method', '')} {record['path']}".strip()
    parts = [head, str(record.get("status", ""))]
    if isinstance(record.get("duration_ms"), int | float):
        parts.append(f"{record['duration_ms']:,.0f} ms")
    skip = {"event", "method", "path", "status", "duration_ms", "user_agent"}
    parts += [f"{key} {value}" for key, value in record.items() if key not in skip]
    if record.get("user_agent"):
        parts.append(f"({record['user_agent']})")  # who asked
    return "  ".join(part for part in parts if part)
