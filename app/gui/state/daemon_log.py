"""The daemon's log as the Server page shows it: without the app's own requests, by default.

The app asks the daemon things every few seconds (is it up, what is loaded, the log itself);
those request lines would bury what the user came to read. Every request the app sends says
``User-Agent: localllm-app/<version>``, the daemon's request log (one JSON object a line) keeps
that, and this drops those lines; the app's chats stay, since they are the user's own work
(their lines name the model and its timings). Qt-free.
"""

from __future__ import annotations

import json
from importlib import metadata

__all__ = ["APP_AGENT", "app_user_agent", "is_app_request", "readable", "visible_log"]

APP_AGENT = "localllm-app"


def app_user_agent() -> str:
    try:
        version = metadata.version("localllm")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"{APP_AGENT}/{version}"


def is_app_request(line: str) -> bool:
    """Whether ``line`` is the daemon's record of a request this app sent by itself (not a
    chat the user sent through it)."""
    if not line.startswith("{") or APP_AGENT not in line:
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict) or "model" in record:  # a generation: the user's
        return False
    agent = record.get("user_agent")
    return isinstance(agent, str) and agent.startswith(APP_AGENT + "/")


def visible_log(text: str, show_app_requests: bool = False, lines: int = 400) -> str:
    """The last ``lines`` lines of the log, the app's own requests left out unless asked."""
    kept = text.splitlines()
    if not show_app_requests:
        kept = [line for line in kept if not is_app_request(line)]
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
