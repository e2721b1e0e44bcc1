"""Cap request bodies so one client cannot exhaust memory; blob uploads and audio files get
their own caps (both stream to disk)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localllm.daemon.security.responses import send_error

__all__ = ["BodyLimitMiddleware"]

DEFAULT_LIMIT = 32 << 20
BLOB_LIMIT = 1 << 40  # uploaded model files stream to disk; 1 TiB is "no practical limit"
AUDIO_LIMIT = 1 << 30  # an hour of 16-bit stereo WAV at 44.1 kHz is 635 MB (OpenAI caps 25 MB)
AUDIO_PATHS = ("/v1/audio/transcriptions", "/v1/audio/translations")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limit: int = DEFAULT_LIMIT, blob_limit: int = BLOB_LIMIT):
        self.app = app
        self.limit = limit
        self.blob_limit = blob_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.blob_limit if scope["path"].startswith("/api/blobs/") else self.limit
        if scope["path"] in AUDIO_PATHS:
            limit = AUDIO_LIMIT
        too_large = f"request body is larger than {limit:,} bytes"
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await send_error(scope, send, 413, too_large)
            return
        received = 0
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit and not refused:
                    # Answer now; the app then sees a disconnect and stops reading.
                    refused = True
                    await send_error(scope, send, 413, too_large)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
