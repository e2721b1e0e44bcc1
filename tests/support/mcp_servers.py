"""Tiny real MCP servers for the tests, written with the official SDK's ``MCPServer``.

``write_server`` puts the script in a folder; tests run it as ``sys.executable script.py``
(stdio) or ``... script.py http PORT`` (streamable HTTP on 127.0.0.1). Every call of ``note``
is appended, as JSON, to ``calls.jsonl`` beside the script, so a test can see that a tool
really ran (or did not).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.daemon import free_port
from tests.support.polling import wait_for

SCRIPT = '''
import json, os, sys, time
from pathlib import Path
from mcp.server.mcpserver import MCPServer

CALLS = Path(__file__).with_name("calls.jsonl")
server = MCPServer("notes")


@server.tool()
def note(text: str) -> str:
    """Write a note down."""
    with CALLS.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": "note", "text": text}) + "\\n")
    return f"noted: {text}"


@server.tool()
def big(size: int) -> str:
    """Return size characters."""
    return "x" * size


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
def crash() -> str:
    """Kill this server."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"


if len(sys.argv) > 2 and sys.argv[1] == "http":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
elif len(sys.argv) > 2 and sys.argv[1] == "sse":
    server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
else:
    server.run()
'''


def write_server(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "notes_server.py"
    script.write_text(SCRIPT, encoding="utf-8")
    return script


def calls(script: Path) -> list[dict]:
    path = script.with_name("calls.jsonl")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@contextmanager
def http_server(script: Path, transport: str = "http") -> Iterator[str]:
    """The script serving streamable HTTP (or ``"sse"``) on a free 127.0.0.1 port; yields
    its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    try:

        def up() -> bool:
            try:
                httpx.get(url, timeout=1.0)
            except httpx.ConnectError:
                return process.poll() is not None
            except httpx.TimeoutException:  # an SSE stream opened and stays open: it is up
                return True
            return True

        assert wait_for(up, timeout=60, interval=0.2), "the MCP HTTP server did not start"
        assert process.poll() is None, "the MCP HTTP server exited"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
