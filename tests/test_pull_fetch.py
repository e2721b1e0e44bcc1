"""How one range request's answer is classified (no sockets: httpx.MockTransport)."""

from __future__ import annotations

import httpx
import pytest

from localllm.model_registry.errors import AuthenticationError, DownloadError
from localllm.model_registry.pull.fetch import BlobSource, RangeNotSupported, RetryableError

HUB = "https://hub.example/org/repo/resolve/abc/model.gguf"
CDN = "https://cdn.example/blob?sig=1"
SIZE = 1000


def source(handler, token: str | None = None) -> BlobSource:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return BlobSource(client, HUB, SIZE, repo="org/repo", token=token)


def read(blob: BlobSource, start: int = 0, end: int | None = 100) -> bytes:
    with blob.open(start, end) as response:
        return response.read()


def test_redirect_is_remembered_and_the_token_stays_on_the_hub():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("Authorization")))
        if request.url.host == "hub.example":
            return httpx.Response(302, headers={"Location": CDN})
        start, end = request.headers["Range"].removeprefix("bytes=").split("-")
        length = int(end) - int(start) + 1
        headers = {"Content-Range": f"bytes {start}-{end}/{SIZE}"}
        return httpx.Response(206, headers=headers, content=b"x" * length)

    blob = source(handler, token="hf_secret")
    assert read(blob) == b"x" * 100
    assert read(blob, 100, 200) == b"x" * 100
    assert seen == [
        (HUB, "Bearer hf_secret"),
        (CDN, None),
        (CDN, None),  # the second part went straight to the CDN
    ]


def test_an_expired_cdn_address_sends_the_next_try_back_to_the_hub():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.host)
        if request.url.host == "hub.example":
            return httpx.Response(302, headers={"Location": CDN})
        if len(calls) == 3:
            return httpx.Response(403)
        return httpx.Response(206, headers={"Content-Range": f"bytes 0-99/{SIZE}"}, content=b"")

    blob = source(handler)
    read(blob)
    with pytest.raises(RetryableError, match="expired"):
        read(blob)
    read(blob)
    assert calls == ["hub.example", "cdn.example", "cdn.example", "hub.example", "cdn.example"]


@pytest.mark.parametrize(
    ("response", "error", "message"),
    [
        (httpx.Response(200, content=b"whole"), RangeNotSupported, None),
        (
            httpx.Response(206, headers={"Content-Range": "bytes 5-99/1000"}),
            RetryableError,
            "range",
        ),
        (httpx.Response(206, headers={"Content-Range": "bytes 0-99/999"}), DownloadError, "size"),
        (httpx.Response(503), RetryableError, "503"),
        (httpx.Response(429), RetryableError, "429"),
        (httpx.Response(404), DownloadError, "no longer on the hub"),
        (httpx.Response(400), DownloadError, "HTTP 400"),
        (httpx.Response(401), AuthenticationError, "no token for hf.co/org/repo"),
    ],
)
def test_answers_are_classified(response, error, message):
    with pytest.raises(error, match=message):
        read(source(lambda request: response))


def test_403_with_a_token_says_the_token_lacks_access():
    with pytest.raises(AuthenticationError) as caught:
        read(source(lambda request: httpx.Response(403), token="hf_x"))
    assert "your Hugging Face token has no access to hf.co/org/repo" in str(caught.value)
    assert "accept its terms at https://huggingface.co/org/repo" in str(caught.value)


def test_a_whole_file_answer_is_fine_when_the_whole_file_was_asked_for():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"y" * SIZE)

    assert read(source(handler), 0, SIZE) == b"y" * SIZE
    assert read(source(handler), 0, None) == b"y" * SIZE


def test_transport_failures_are_retryable():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(RetryableError, match="could not connect"):
        read(source(handler))
