"""A small recording proxy: what a coding agent really sends, captured on its way to a daemon.

``python -m tests.support.recording_proxy --upstream URL --port N --out FILE.jsonl`` forwards
every request to ``URL`` unchanged, streams the answer back, and appends one JSON line per
exchange to ``FILE``: method, path, query, the headers that matter to parsing (never
``authorization`` or ``x-api-key``), the request body as JSON, the status, and the answer's
first bytes. ``--force-tool NAME`` makes the first request that offers a tool ``NAME`` force a
call of it (``tool_choice``, in the request's own API shape) on its way upstream, so a model
with random weights still makes the call an agent then runs and answers: the record keeps the
request as the agent sent it. The forced tool's strings get a ``maxLength`` on the way too, so
the random words a tiny model writes into them stay short. The fixtures under
``tests/agents/fixtures`` were made this way (``tests/support/record_agents.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

__all__ = ["forced_request", "make_app"]

_KEPT_HEADERS = ("content-type", "accept", "anthropic-beta", "anthropic-version", "openai-beta")
_ANSWER_BYTES = 4000  # of each answer, in the record
_SHORT = 12  # characters, the most a forced call's strings take


def _forced_choice(path: str, body: dict, name: str) -> dict | None:
    """``tool_choice`` forcing ``name`` in the shape of the API at ``path``, or None when the
    request offers no such tool."""
    if path.endswith("/messages"):
        offered = {tool.get("name") for tool in body.get("tools") or ()}
        return {"type": "tool", "name": name} if name in offered else None
    if path.endswith("/responses"):
        offered = set()
        for tool in body.get("tools") or ():
            offered |= {t.get("name") for t in tool.get("tools") or ()} | {tool.get("name")}
        return {"type": "function", "name": name} if name in offered else None
    offered = {(tool.get("function") or {}).get("name") for tool in body.get("tools") or ()}
    return {"type": "function", "function": {"name": name}} if name in offered else None


def forced_request(path: str, body: dict, name: str) -> dict | None:
    """``body`` forcing a call of ``name``, its strings kept short; None when not offered."""
    choice = _forced_choice(path, body, name)
    if choice is None:
        return None
    return {**body, "tool_choice": choice, "tools": _short_strings(body["tools"], name)}


def _short_strings(value: object, name: str | None = None, inside: bool = False) -> object:
    """The tools, with a ``maxLength`` on every string schema of the tool called ``name``."""
    if isinstance(value, list):
        return [_short_strings(item, name, inside) for item in value]
    if not isinstance(value, dict):
        return value
    inside = (
        inside or value.get("name") == name or (value.get("function") or {}).get("name") == name
    )
    out = {key: _short_strings(item, name, inside) for key, item in value.items()}
    if inside and out.get("type") == "string" and not {"enum", "const", "maxLength"} & out.keys():
        out["maxLength"] = _SHORT
    return out


def make_app(upstream: str, out: Path, force_tool: str | None = None) -> Starlette:
    client = httpx.AsyncClient(base_url=upstream, timeout=None)
    forced = [] if force_tool else [None]  # one forced request, then plain forwarding

    async def forward(request: Request) -> StreamingResponse:
        raw = await request.body()
        body = json.loads(raw) if raw else None
        sent = raw
        if isinstance(body, dict) and not forced:
            changed = forced_request(request.url.path, body, force_tool)
            if changed is not None:
                forced.append(changed["tool_choice"])
                sent = json.dumps(changed).encode()
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        upstream_request = client.build_request(
            request.method, request.url.path, params=request.query_params, headers=headers,
            content=sent,
        )  # fmt: skip
        answer = await client.send(upstream_request, stream=True)
        record = {
            "method": request.method,
            "path": request.url.path,
            "query": str(request.url.query),
            "headers": {k: v for k, v in request.headers.items() if k in _KEPT_HEADERS},
            "body": body,
            "status": answer.status_code,
        }
        head = bytearray()

        async def relay():
            async for chunk in answer.aiter_raw():
                if len(head) < _ANSWER_BYTES:
                    head.extend(chunk[: _ANSWER_BYTES - len(head)])
                yield chunk

        async def finish() -> None:
            await answer.aclose()
            record["answer"] = head.decode(errors="replace")
            with out.open("a") as stream:
                stream.write(json.dumps(record) + "\n")

        kept = {
            k: v
            for k, v in answer.headers.items()
            if k not in ("content-length", "transfer-encoding", "content-encoding")
        }
        return StreamingResponse(
            relay(), status_code=answer.status_code, headers=kept, background=BackgroundTask(finish)
        )

    methods = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", forward, methods=methods)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--force-tool")
    args = parser.parse_args()
    app = make_app(args.upstream, args.out, args.force_tool)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
