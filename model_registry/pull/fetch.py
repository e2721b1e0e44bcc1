"""One HTTP range request for a blob, with the hub's quirks handled in one place.

Hugging Face answers a file URL with a redirect to a CDN. :class:`BlobSource` remembers
where it was sent, so later parts go straight to the CDN (one round trip fewer per part), and
goes back to the hub URL when that address stops working (signed CDN URLs expire). The token
only ever goes to the hub's own origin, never to the CDN. Every answer is sorted into: data
to read, a failure worth retrying (:class:`RetryableError`), a server that ignores ``Range``
(:class:`RangeNotSupported`), or a failure that retrying cannot fix (raised as a
:class:`PullError`).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from localllm.model_registry.errors import AuthenticationError, DownloadError

__all__ = [
    "BlobSource",
    "DownloadOptions",
    "RangeNotSupported",
    "RetryableError",
    "auth_advice",
]

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


@dataclass(frozen=True, slots=True)
class DownloadOptions:
    """How the downloader uses the network. Tests shrink the sizes and timeouts."""

    connections: int = 4  # concurrent range requests per blob
    part_size: int = 16 << 20  # bytes per range request (and per resumable unit)
    stall_timeout: float = 30.0  # seconds without a byte before a connection is retried
    connect_timeout: float = 15.0
    retry_backoff: float = 0.5  # first wait before a retry; doubles each time
    max_backoff: float = 15.0
    max_attempts: int = 8  # failed tries in a row (without progress) before giving up
    save_interval: float = 0.5  # at most this often the progress sidecar is rewritten

    def __post_init__(self) -> None:
        if self.connections < 1 or self.stall_timeout <= 0:
            raise ValueError("connections and stall_timeout must be positive")
        if self.part_size < 4096:
            raise ValueError("part_size must be at least 4 KiB")

    def backoff(self, failures: int) -> float:
        doubling: int = 2 ** max(0, failures - 1)
        return min(self.max_backoff, self.retry_backoff * doubling)

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.stall_timeout, connect=self.connect_timeout, pool=None)


class RetryableError(Exception):
    """A failure that another try may not have (dropped connection, stall, 5xx)."""


class RangeNotSupported(Exception):
    """The server sent the whole file (200) for a range request."""


class BlobSource:
    """Where one blob's bytes come from: its hub URL and the CDN URL it redirects to."""

    def __init__(
        self,
        client: httpx.Client,
        url: str,
        size: int,
        *,
        repo: str,
        token: str | None = None,
        timeout: httpx.Timeout | None = None,
    ):
        self._client = client
        self._timeout = timeout if timeout is not None else client.timeout
        self._url = url
        self._origin = httpx.URL(url).copy_with(path="/", query=None, fragment=None)
        self._size = size
        self._repo = repo
        self._token = token
        self._redirected: str | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def open(self, start: int, end: int | None) -> Iterator[httpx.Response]:
        """A streaming response for bytes ``[start, end)``, or the whole file if ``end`` is None.

        Transport failures while the caller reads the body surface as :class:`RetryableError`.
        """
        with self._lock:
            url = self._redirected or self._url
        headers = self._headers(url, start, end)
        request = self._client.build_request("GET", url, headers=headers, timeout=self._timeout)
        try:
            response = self._client.send(request, stream=True, follow_redirects=True)
        except httpx.TransportError as error:
            raise RetryableError(_describe(error)) from error
        try:
            self._check(response, start, end)
            yield response
        except httpx.TransportError as error:
            raise RetryableError(_describe(error)) from error
        finally:
            response.close()

    def _headers(self, url: str, start: int, end: int | None) -> dict[str, str]:
        headers = {"Accept-Encoding": "identity"}
        if end is not None:
            headers["Range"] = f"bytes={start}-{end - 1}"
        if self._token and self._same_origin(httpx.URL(url)):
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _same_origin(self, url: httpx.URL) -> bool:
        origin = self._origin
        return (url.scheme, url.host, url.port) == (origin.scheme, origin.host, origin.port)

    def _check(self, response: httpx.Response, start: int, end: int | None) -> None:
        status = response.status_code
        if response.history and not self._same_origin(response.url):
            with self._lock:
                self._redirected = str(response.url)
        if status == 206 and end is not None:
            self._check_content_range(response, start)
            return
        if status == 200:
            if end is not None and not (start == 0 and end == self._size):
                raise RangeNotSupported
            return
        if status in (401, 403, 404, 410) and not self._same_origin(response.url):
            with self._lock:  # the CDN address expired: ask the hub for a fresh one
                self._redirected = None
            raise RetryableError(f"the download address expired (HTTP {status})")
        if status in (401, 403):
            raise AuthenticationError(self._auth_message(status))
        if status == 429 or status >= 500:
            raise RetryableError(f"the server answered HTTP {status}")
        if status in (404, 410):
            raise DownloadError(
                f"hf.co/{self._repo}: a file of this model is no longer on the hub (HTTP {status})"
            )
        raise DownloadError(f"hf.co/{self._repo}: the download failed with HTTP {status}")

    def _check_content_range(self, response: httpx.Response, start: int) -> None:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if match is None or int(match.group(1)) != start:
            raise RetryableError("the server sent a different byte range than asked for")
        if match.group(3) != "*" and int(match.group(3)) != self._size:
            raise DownloadError(
                f"hf.co/{self._repo}: the file on the hub changed size during the pull; "
                "run the pull again"
            )

    def _auth_message(self, status: int) -> str:
        whose = "your Hugging Face token has no access to" if self._token else "no token for"
        return f"{whose} hf.co/{self._repo} (HTTP {status}): {auth_advice(self._repo)}"


def auth_advice(repo: str) -> str:
    """What to do about a 401/403 from the hub, in the words every such error uses."""
    return (
        f"this repo is gated or private: accept its terms at https://huggingface.co/{repo} "
        "and run `localllm login` or set HF_TOKEN"
    )


def _describe(error: httpx.TransportError) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "the connection stalled"
    if isinstance(error, httpx.ConnectError):
        return "could not connect"
    return "the connection was interrupted"
