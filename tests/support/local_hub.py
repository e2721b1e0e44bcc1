"""A local stand-in for the Hugging Face Hub: real HTTP on 127.0.0.1, in a background thread.

It speaks the paths huggingface_hub 2.x requests, so the real client works against it when
given ``endpoint=hub.endpoint`` (or ``HF_ENDPOINT``):

* ``GET /api/models?search=&filter=gguf&limit=`` (search),
* ``GET /api/models/{repo}[/revision/{rev}]`` (``?blobs=true`` adds size, blobId, lfs),
* ``POST /api/models/{repo}/paths-info/{rev}``, ``GET /api/models/{repo}/tree/{rev}[/{path}]``,
* ``HEAD|GET /{repo}/resolve/{rev}/{path}``: LFS files answer 302 to ``/cdn/...`` with
  ``X-Repo-Commit``, ``X-Linked-Size``, ``X-Linked-Etag`` and ``ETag``; the CDN serves bytes
  with ``Range``/206. Gated repos refuse files without a token (401) or with a wrong one (403),
  private ones refuse everything, with the ``X-Error-Code`` headers huggingface_hub reads.

Repos are registered in-process (``hub.add_repo("org/repo", {"m.gguf": data_or_path})``).
Per file, :class:`Fault` injects a dropped connection, a stall, corrupt bytes, a 200 answer to
a Range request or an error status; ``set_throttle`` limits each response of a file,
``set_link_rate`` all responses together (one shared link); ``bytes_served`` and
``blob_requests`` count what went out, so tests can assert how much was (re-)fetched,
``stalls_abandoned`` the stalled responses a client hung up on, and ``peak_files_sending``
how many distinct files were being sent at the same moment.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.support.polling import wait_for

__all__ = ["DEFAULT_TOKEN", "Fault", "LocalHub"]

DEFAULT_TOKEN = "hf_local_hub_token"
_CHUNK = 64 << 10
_FLIP = bytes(range(256))[::-1]  # corrupt bytes: every byte b becomes 255 - b
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@dataclass
class Fault:
    """Misbehaviour for the next ``times`` responses of one file's bytes (None: all)."""

    drop_at: int | None = None  # close the connection when reaching this byte offset
    stall_at: int | None = None  # at this offset, send nothing until the client hangs up
    stall_seconds: float = 5.0  # or until this long has passed: then go on sending
    corrupt: bool = False  # serve inverted bytes
    ignore_range: bool = False  # answer a Range request with 200 and the whole file
    status: int | None = None  # answer with this HTTP status instead of the bytes
    times: int | None = 1


@dataclass
class _File:
    path: str
    data: bytes | None
    source: Path | None
    size: int
    sha256: str
    oid: str
    lfs: bool
    reported_size: int | None = None
    fault: Fault | None = None
    throttle: float | None = None
    served: int = 0
    requests: int = 0
    stalls_abandoned: int = 0


@dataclass
class _Repo:
    repo_id: str
    commit: str
    files: dict[str, _File]
    gated: bool = False
    private: bool = False
    token: str = DEFAULT_TOKEN
    log: list[str] = field(default_factory=list)


class LocalHub:
    """Start with ``with LocalHub() as hub:`` (or :meth:`start`/:meth:`stop`)."""

    def __init__(self, *, redirect: bool = True):
        self.redirect = redirect
        self.requests_log: list[tuple[str, str]] = []
        self._repos: dict[str, _Repo] = {}
        self._lock = threading.Lock()
        self._cdn_generation = 0
        self._expire_after = 0
        self._servers: list[_Server] = []
        self.cdn_saw_token = False  # set if a request to the CDN carried an Authorization
        self._sending = 0  # response bodies being sent right now
        self._files_sending: dict[int, int] = {}  # id(file) -> bodies of it being sent
        self.peak_files_sending = 0  # the most distinct files ever sent at the same moment
        self.link_rate: float | None = None  # bytes/s shared by all responses (a "link")
        self._link_free_at = 0.0

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> LocalHub:
        """Serve the hub and, on a second port (another origin, as a real CDN), the bytes."""
        for _ in range(2):
            server = _Server(("127.0.0.1", 0), _Handler)
            server.hub = self  # type: ignore[attr-defined]
            self._servers.append(server)
            threading.Thread(
                target=server.serve_forever, args=(0.05,), name="local-hub", daemon=True
            ).start()
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> LocalHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        """The hub's URL (pass it as ``endpoint`` or ``HF_ENDPOINT``)."""
        assert self._servers, "start the hub first"
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def cdn_endpoint(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    # -- content ----------------------------------------------------------------------------
    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes | Path],
        *,
        gated: bool = False,
        private: bool = False,
        token: str = DEFAULT_TOKEN,
    ) -> str:
        """Publish a repository; returns its commit sha. ``.gguf`` files are LFS files."""
        entries = {path: _make_file(path, content) for path, content in files.items()}
        commit = hashlib.sha1(
            json.dumps(sorted((p, f.sha256) for p, f in entries.items())).encode()
        ).hexdigest()
        with self._lock:
            self._repos[repo_id.lower()] = _Repo(repo_id, commit, entries, gated, private, token)
        return commit

    def set_fault(self, repo_id: str, path: str, fault: Fault | None = None, **fields) -> None:
        with self._lock:
            self._file(repo_id, path).fault = fault if fault is not None else Fault(**fields)

    def set_throttle(self, repo_id: str, path: str, bytes_per_second: float | None) -> None:
        with self._lock:
            self._file(repo_id, path).throttle = bytes_per_second

    def set_link_rate(self, bytes_per_second: float | None) -> None:
        """Share this bandwidth between every response, like one network link."""
        with self._lock:
            self.link_rate, self._link_free_at = bytes_per_second, 0.0

    def _use_link(self, count: int) -> None:
        """Wait for the link to carry ``count`` more bytes (first come, first served)."""
        with self._lock:
            if not self.link_rate:
                return
            now = time.monotonic()
            start = max(now, self._link_free_at)
            self._link_free_at = start + count / self.link_rate
        if start > now:
            time.sleep(start - now)

    def _count_cdn_response(self) -> None:
        with self._lock:
            if self._expire_after:
                self._expire_after -= 1
                if not self._expire_after:
                    self._cdn_generation += 1

    def report_size(self, repo_id: str, path: str, size: int | None) -> None:
        """Make the LFS metadata claim another size (the bytes served do not change)."""
        with self._lock:
            self._file(repo_id, path).reported_size = size

    def expire_cdn_urls(self, after_requests: int = 0) -> None:
        """Every CDN address handed out so far answers 403 (as expired signed URLs do), now
        or once the CDN has served ``after_requests`` more responses."""
        with self._lock:
            if after_requests:
                self._expire_after = after_requests
            else:
                self._cdn_generation += 1

    def bytes_served(self, repo_id: str, path: str) -> int:
        return self._file(repo_id, path).served

    def stalls_abandoned(self, repo_id: str, path: str) -> int:
        """Stalled responses of this file whose client hung up before the stall ended."""
        return self._file(repo_id, path).stalls_abandoned

    def blob_requests(self, repo_id: str, path: str) -> int:
        """GET requests that reached this file's bytes (resolve or CDN)."""
        return self._file(repo_id, path).requests

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no response body is being sent (old connections wound down)."""
        if not wait_for(lambda: not self._sending, timeout):
            raise TimeoutError("the hub is still sending")

    def reset_counters(self) -> None:
        with self._lock:
            self.requests_log.clear()
            for repo in self._repos.values():
                for entry in repo.files.values():
                    entry.served = entry.requests = entry.stalls_abandoned = 0

    def commit(self, repo_id: str) -> str:
        return self._repos[repo_id.lower()].commit

    def sha256(self, repo_id: str, path: str) -> str:
        return self._file(repo_id, path).sha256

    def _file(self, repo_id: str, path: str) -> _File:
        return self._repos[repo_id.lower()].files[path]

    def _repo(self, repo_id: str) -> _Repo | None:
        """Repository ids are case-insensitive, as on the real hub."""
        with self._lock:
            return self._repos.get(repo_id.lower())

    def _consume(self, entry: _File, fault: Fault) -> None:
        """A fault fired once; forget it when it has fired ``times`` times."""
        with self._lock:
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0 and entry.fault is fault:
                    entry.fault = None


def _make_file(path: str, content: bytes | Path) -> _File:
    if isinstance(content, (bytes, bytearray)):
        data, source = bytes(content), None
        sha256, size = hashlib.sha256(data).hexdigest(), len(data)
        git = hashlib.sha1(b"blob %d\0" % size + data).hexdigest()
    else:
        data, source = None, Path(content)
        sha256, size, git = _hash_file(source)
    return _File(path, data, source, size, sha256, git, lfs=path.endswith(".gguf"))


def _hash_file(path: Path) -> tuple[str, int, str]:
    size = path.stat().st_size
    sha256, sha1 = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
    with path.open("rb") as stream:
        while chunk := stream.read(8 << 20):
            sha256.update(chunk)
            sha1.update(chunk)
    return sha256.hexdigest(), size, sha1.hexdigest()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def handle_error(self, request, client_address) -> None:
        """Clients that hang up (killed, paused, stalled out) are normal here: stay quiet."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls at the end of responses
    server_version = "LocalHub/1.0"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    @property
    def hub(self) -> LocalHub:
        return self.server.hub  # type: ignore[attr-defined]

    # -- routing ----------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    def do_POST(self) -> None:
        self._body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._route(head=False)

    def _route(self, head: bool) -> None:
        url = urlsplit(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        self.hub.requests_log.append((self.command, url.path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if path.rstrip("/") == "/api/models":
                self._search(query)
            elif path.startswith("/api/models/"):
                self._api(path.removeprefix("/api/models/"), query)
            elif path.startswith("/cdn/"):
                self._cdn(path.removeprefix("/cdn/"), query, head)
            elif "/resolve/" in path:
                self._resolve(path.lstrip("/"), head)
            else:
                self._error(404, "not found")

    # -- API --------------------------------------------------------------------------------
    def _api(self, rest: str, query: dict[str, list[str]]) -> None:
        parts = rest.split("/")
        repo = self.hub._repo("/".join(parts[:2]))
        if repo is None or (repo.private and not self._authorized(repo)):
            self._repo_not_found()
            return
        action, rev, extra = _split_action(parts[2:])
        if rev not in ("main", repo.commit):
            self._error(404, "Revision not found", code="RevisionNotFound")
        elif action == "paths-info" and self.command == "POST":
            self._json([self._entry(repo, p) for p in self._posted_paths() if p in repo.files])
        elif action == "tree":
            prefix = extra.strip("/")
            entries = [f for p, f in repo.files.items() if p.startswith(prefix)]
            self._json([self._entry(repo, f.path) for f in entries])
        elif action in ("", "revision"):
            blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
            self._json(_model_info(repo, blobs))
        else:
            self._error(404, "not found")

    def _search(self, query: dict[str, list[str]]) -> None:
        """``GET /api/models?search=&filter=gguf&limit=``: public repos, by id substring."""
        words = query.get("search", [""])[0].lower()
        gguf_only = "gguf" in query.get("filter", [])
        limit = int(query.get("limit", ["1000"])[0])
        found = []
        for repo in list(self.hub._repos.values()):
            has_gguf = any(p.lower().endswith(".gguf") for p in repo.files)
            if repo.private or words not in repo.repo_id.lower() or (gguf_only and not has_gguf):
                continue
            info = _model_info(repo, blobs=False)
            info.pop("siblings")
            found.append(info | {"downloads": len(repo.files), "likes": 0})
        self._json(found[:limit])

    def _entry(self, repo: _Repo, path: str) -> dict[str, object]:
        entry = repo.files[path]
        size = entry.reported_size if entry.reported_size is not None else entry.size
        document: dict[str, object] = {"type": "file", "path": path, "size": size, "oid": entry.oid}
        if entry.lfs:
            document["lfs"] = {"oid": entry.sha256, "size": size, "pointerSize": 134}
        return document

    def _posted_paths(self) -> list[str]:
        body = getattr(self, "_body", b"").decode()
        if "json" in (self.headers.get("Content-Type") or ""):
            return list(json.loads(body).get("paths", []))
        return parse_qs(body).get("paths", [])

    # -- files ------------------------------------------------------------------------------
    def _resolve(self, path: str, head: bool) -> None:
        match = re.fullmatch(r"([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        repo = self.hub._repo(match.group(1)) if match else None
        if repo is None or match is None or (repo.private and not self._authorized(repo)):
            self._repo_not_found()
            return
        rev, file_path = match.group(2), match.group(3)
        entry = repo.files.get(file_path)
        if rev not in ("main", repo.commit):
            self._error(404, "Revision not found", code="RevisionNotFound")
        elif entry is None:
            self._error(404, "Entry not found", code="EntryNotFound")
        elif repo.gated and not self._authorized(repo):
            self._gated(repo)
        elif entry.lfs and self.hub.redirect:
            generation = self.hub._cdn_generation
            cdn = self.hub.cdn_endpoint
            location = f"{cdn}/cdn/{repo.repo_id}/{quote(file_path)}?sig={generation}"
            self._send_head(302, 0, self._file_headers(repo, entry) | {"Location": location})
        else:
            self._serve(entry, head, self._file_headers(repo, entry))

    def _cdn(self, rest: str, query: dict[str, list[str]], head: bool) -> None:
        org, name, file_path = [*rest.split("/", 2), "", ""][:3]
        repo = self.hub._repo(f"{org}/{name}")
        entry = repo.files.get(file_path) if repo else None
        if self.headers.get("Authorization"):
            self.hub.cdn_saw_token = True
        if entry is None:
            self._error(404, "not found")
        elif query.get("sig", [""])[0] != str(self.hub._cdn_generation):
            self._error(403, "Request has expired")
        else:
            self.hub._count_cdn_response()
            self._serve(entry, head, {"ETag": f'"{entry.sha256}"'})

    def _file_headers(self, repo: _Repo, entry: _File) -> dict[str, str]:
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{entry.oid}"'}
        if entry.lfs:
            headers |= {"X-Linked-Size": str(entry.size), "X-Linked-Etag": f'"{entry.sha256}"'}
        return headers

    def _serve(self, entry: _File, head: bool, headers: dict[str, str]) -> None:
        fault = None if head else entry.fault
        if fault is not None and fault.status is not None:
            self.hub._consume(entry, fault)
            self._error(fault.status, "injected failure")
            return
        start, end, status = 0, entry.size, 200
        requested = _parse_range(self.headers.get("Range"), entry.size)
        if requested is not None and fault is not None and fault.ignore_range:
            self.hub._consume(entry, fault)
        elif requested is not None:
            (start, end), status = requested, 206
            headers = headers | {"Content-Range": f"bytes {start}-{end - 1}/{entry.size}"}
        if fault is not None and fault.corrupt:
            self.hub._consume(entry, fault)
        headers = headers | {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        self._send_head(status, end - start, headers)
        if not head:
            with self.hub._lock:
                entry.requests += 1
            _Body(self, entry, fault).send(start, end)

    # -- answers ----------------------------------------------------------------------------
    def _authorized(self, repo: _Repo) -> bool:
        return self.headers.get("Authorization") == f"Bearer {repo.token}"

    def _repo_not_found(self) -> None:
        # Like the real hub: 401 without a token (it may be private), 404 with one.
        status = 404 if self.headers.get("Authorization") else 401
        self._error(status, "Repository not found", code="RepoNotFound")

    def _gated(self, repo: _Repo) -> None:
        status = 403 if self.headers.get("Authorization") else 401
        message = f"Access to model {repo.repo_id} is restricted."
        self._error(status, message, code="GatedRepo")

    def _json(self, document: object) -> None:
        body = json.dumps(document).encode()
        self._send_head(200, len(body), {"Content-Type": "application/json"})
        self.wfile.write(body)

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._send_head(status, len(body), headers)
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_head(self, status: int, length: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(length))
        self.end_headers()


class _Body:
    """Sends ``[start, end)`` of a file, misbehaving as its fault says."""

    def __init__(self, handler: _Handler, entry: _File, fault: Fault | None):
        self.handler, self.entry, self.fault = handler, entry, fault
        self.hub = handler.hub
        self._file: BinaryIO | None = None

    def send(self, start: int, end: int) -> None:
        hub, key = self.hub, id(self.entry)
        with hub._lock:
            hub._sending += 1
            hub._files_sending[key] = hub._files_sending.get(key, 0) + 1
            hub.peak_files_sending = max(hub.peak_files_sending, len(hub._files_sending))
        try:
            self._send(start, end)
        finally:
            with hub._lock:
                hub._sending -= 1
                hub._files_sending[key] -= 1
                if not hub._files_sending[key]:
                    del hub._files_sending[key]

    def _send(self, start: int, end: int) -> None:
        plain = self.fault is None and self.entry.throttle is None and not self.hub.link_rate
        if plain and self.entry.source is not None:
            self._sendfile(start, end)
            return
        with contextlib.ExitStack() as stack:
            if self.entry.source is not None:
                self._file = stack.enter_context(self.entry.source.open("rb"))
            began, position = time.monotonic(), start
            while position < end:
                count = self._next_count(position, end)
                if count is None:
                    return
                if count:
                    self.hub._use_link(count)
                    self._write(position, count)
                    position += count
                self._pace(began, position - start)

    def _next_count(self, position: int, end: int) -> int | None:
        """Bytes to send now; 0 after a stall; None when the connection was dropped."""
        fault, count = self.fault, min(_CHUNK, end - position)
        if self.entry.throttle:
            count = max(1, min(count, int(self.entry.throttle / 50)))
        if fault and fault.drop_at is not None and position <= fault.drop_at < position + count:
            if fault.drop_at > position:
                return fault.drop_at - position
            self.hub._consume(self.entry, fault)
            self._drop()
            return None
        if fault and fault.stall_at is not None and position <= fault.stall_at < position + count:
            if fault.stall_at > position:
                return fault.stall_at - position
            self.hub._consume(self.entry, fault)
            self.fault = None  # stall once per response, then go on
            if self._client_hung_up_within(fault.stall_seconds):
                with self.hub._lock:
                    self.entry.stalls_abandoned += 1
                return None
        return count

    def _client_hung_up_within(self, seconds: float) -> bool:
        """Send nothing for ``seconds``, or until the client hangs up (True)."""
        connection = self.handler.connection
        if not select.select([connection], [], [], seconds)[0]:
            return False
        try:
            return connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _write(self, position: int, count: int) -> None:
        if self.entry.data is not None:
            data = self.entry.data[position : position + count]
        else:
            data = os.pread(self._file.fileno(), count, position)
        if self.fault and self.fault.corrupt:
            data = data.translate(_FLIP)
        self.handler.wfile.write(data)
        self._count(len(data))

    def _pace(self, began: float, sent: int) -> None:
        if self.entry.throttle:
            delay = sent / self.entry.throttle - (time.monotonic() - began)
            if delay > 0:
                time.sleep(delay)

    def _sendfile(self, start: int, end: int) -> None:
        out = self.handler.connection.fileno()
        with open(self.entry.source, "rb") as stream:  # type: ignore[arg-type]
            position = start
            while position < end:
                sent = os.sendfile(out, stream.fileno(), position, min(4 << 20, end - position))
                if sent == 0:
                    return
                self._count(sent)
                position += sent

    def _count(self, count: int) -> None:
        with self.hub._lock:
            self.entry.served += count

    def _drop(self) -> None:
        self.handler.close_connection = True
        with contextlib.suppress(OSError):
            self.handler.connection.shutdown(socket.SHUT_RDWR)


def _model_info(repo: _Repo, blobs: bool) -> dict[str, object]:
    siblings = []
    for path, entry in repo.files.items():
        sibling: dict[str, object] = {"rfilename": path}
        if blobs:
            size = entry.reported_size if entry.reported_size is not None else entry.size
            sibling |= {"size": size, "blobId": entry.oid}
            if entry.lfs:
                sibling["lfs"] = {"sha256": entry.sha256, "size": size, "pointerSize": 134}
        siblings.append(sibling)
    return {
        "_id": repo.commit[:24],
        "id": repo.repo_id,
        "modelId": repo.repo_id,
        "author": repo.repo_id.split("/")[0],
        "sha": repo.commit,
        "private": repo.private,
        "gated": "manual" if repo.gated else False,
        "disabled": False,
        "library_name": "gguf",
        "tags": ["gguf"],
        "siblings": siblings,
        "lastModified": "2026-01-01T00:00:00.000Z",
        "createdAt": "2026-01-01T00:00:00.000Z",
    }


def _split_action(parts: list[str]) -> tuple[str, str, str]:
    """``[]`` -> info at main; ``[revision, r]``; ``[tree|paths-info, r, *path]``."""
    if not parts or parts == [""]:
        return "", "main", ""
    action = parts[0]
    rev = unquote(parts[1]) if len(parts) > 1 else "main"
    return action, rev, "/".join(parts[2:])


def _parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    match = _RANGE.fullmatch((header or "").strip())
    if match is None or not (match.group(1) or match.group(2)):
        return None
    if not match.group(1):  # suffix range: the last N bytes
        return max(0, size - int(match.group(2))), size
    start = int(match.group(1))
    end = min(size, int(match.group(2)) + 1) if match.group(2) else size
    return (start, end) if start < end else None
