"""The MCP host: one asyncio event loop on its own thread, holding a session per server.

The MCP SDK is asyncio; the app is not. Callers (GUI workers, tests) call the blocking
``tools`` and ``call``, which run on the host's loop and wait with a timeout, so neither a
server that never answers nor one that crashes can hold the caller forever. A server is started
on first use and kept; one whose session ended (crashed, or closed its end) is started afresh
the next time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlparse

from mcp.client.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client

from localllm.app.tools.catalog import ToolSpec
from localllm.app.tools.errors import ToolError, explain
from localllm.app.tools.results import RESULT_LIMIT, ToolResult, result_text
from localllm.app.tools.server_log import BoundedLog
from localllm.app.tools.servers import ServerConfig

__all__ = ["McpHost", "ToolError"]

_GRACE = 5.0  # beyond a timeout on the loop, before the caller stops waiting for the loop


class _Link:
    """One server's running session: the task that holds it open, and the session."""

    def __init__(self, config: ServerConfig):
        self.config = config
        self.stop = asyncio.Event()
        self.ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self.task: asyncio.Task | None = None

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done()


class McpHost:
    def __init__(
        self,
        *,
        start_timeout: float = 30.0,
        call_timeout: float = 60.0,
        result_limit: int = RESULT_LIMIT,
        log_dir: Path | None = None,
    ):
        self.start_timeout, self.call_timeout = start_timeout, call_timeout
        self.result_limit = result_limit
        self._log_dir = log_dir
        self._links: dict[str, _Link] = {}  # touched only on the loop
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-host", daemon=True)
        self._thread.start()

    # blocking calls, from any thread but the host's

    def tools(self, server: ServerConfig) -> list[ToolSpec]:
        """The server's tools (starting it if it is not running)."""
        return self._wait(self._tools(server), self.start_timeout + self.call_timeout)

    def call(self, server: ServerConfig, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; a tool that reports an error comes back as a result marked so, a
        server that fails as ``ToolError``."""
        return self._wait(
            self._call(server, tool, arguments), self.start_timeout + self.call_timeout
        )

    def running(self, name: str) -> bool:
        link = self._links.get(name)
        return link is not None and link.alive

    def stop(self, name: str) -> None:
        """Stop one server (its settings changed, or it was turned off)."""
        self._wait(self._stop(name), self.start_timeout)

    def close(self) -> None:
        """Stop every server and the loop."""
        if not self._loop.is_running():
            return
        with contextlib.suppress(ToolError):
            self._wait(self._stop_all(), self.start_timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=_GRACE)

    def _wait(self, coroutine: Coroutine[Any, Any, Any], timeout: float) -> Any:
        if threading.current_thread() is self._thread:
            raise RuntimeError("the MCP host's calls block: never call them on its own loop")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout + _GRACE)
        except TimeoutError:
            future.cancel()
            raise ToolError("the MCP server did not answer in time") from None

    # on the loop

    async def _tools(self, server: ServerConfig) -> list[ToolSpec]:
        client = await self._client(server)
        found: list[ToolSpec] = []
        cursor: str | None = None
        while True:
            page = await self._timed(server, client.list_tools(cursor=cursor), "listing tools")
            found += [
                ToolSpec(server.name, t.name, t.description or "", t.input_schema or {})
                for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                return found

    async def _call(self, server: ServerConfig, tool: str, arguments: dict[str, Any]):
        client = await self._client(server)
        result = await self._timed(server, client.call_tool(tool, arguments), f"running {tool}")
        return result_text(result, self.result_limit)

    async def _timed(self, server: ServerConfig, work: Coroutine[Any, Any, Any], doing: str):
        try:
            return await asyncio.wait_for(work, self.call_timeout)
        except TimeoutError:
            raise ToolError(
                f"{server.name} did not answer within {self.call_timeout:g} s ({doing})"
            ) from None
        except Exception as exc:  # the session may be gone: the next use starts it afresh
            await self._stop(server.name)
            raise ToolError(f"{server.name} failed while {doing}: {explain(exc)}") from None

    async def _client(self, server: ServerConfig) -> Client:
        link = self._links.get(server.name)
        if link is not None and (not link.alive or link.config != server):
            await self._stop(server.name)
            link = None
        if link is None:
            link = _Link(server)
            link.task = asyncio.create_task(self._hold(link), name=f"mcp:{server.name}")
            self._links[server.name] = link
        try:
            return await asyncio.wait_for(asyncio.shield(link.ready), self.start_timeout)
        except TimeoutError:
            await self._stop(server.name)
            raise ToolError(
                f"{server.name} did not start within {self.start_timeout:g} s"
            ) from None
        except Exception as exc:
            self._links.pop(server.name, None)
            raise ToolError(f"{server.name} could not start: {explain(exc)}") from None

    async def _hold(self, link: _Link) -> None:
        """Open the session, hand it out, keep it open until told to stop (or it ends)."""
        errlog = self._errlog(link.config)
        try:
            async with Client(_transport(link.config, errlog)) as client:
                link.ready.set_result(client)
                await link.stop.wait()
        except BaseException as exc:  # the session ended on its own: report it to the waiter
            if not link.ready.done():
                link.ready.set_exception(
                    exc if isinstance(exc, Exception) else ToolError("stopped")
                )
            if isinstance(exc, asyncio.CancelledError) and link.stop.is_set():
                return
        finally:
            errlog.close()

    async def _stop(self, name: str) -> None:
        link = self._links.pop(name, None)
        if link is None or link.task is None:
            return
        link.stop.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(link.task, self.start_timeout)

    async def _stop_all(self) -> None:
        for name in list(self._links):
            await self._stop(name)

    def _errlog(self, config: ServerConfig) -> TextIO:
        """Where a stdio server's stderr goes: a log file per server, bounded in size
        (``server_log``), or nowhere."""
        if self._log_dir is None:
            return open(os.devnull, "w", encoding="utf-8")
        self._log_dir.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in config.name)
        return BoundedLog(self._log_dir / f"mcp-{safe}.log").stream


def _transport(config: ServerConfig, errlog: TextIO) -> Any:
    """Streamable HTTP for a URL, the older SSE transport for one whose path ends in /sse,
    else the command over stdio."""
    if config.url:
        if urlparse(config.url).path.rstrip("/").endswith("/sse"):
            return sse_client(config.url)
        return config.url
    params = StdioServerParameters(
        command=config.command,
        args=list(config.args),
        env=dict(config.env) or None,
        cwd=config.cwd or None,
    )
    return stdio_client(params, errlog=errlog)
