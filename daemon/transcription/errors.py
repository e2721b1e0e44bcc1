"""What a transcription fails with: the llama runner's errors, and one of its own.

RunnerError                 (``daemon.runners.types``) the runner failed the request
├── RunnerCrashed           the runner process died; the message ends with its last log lines
└── InvalidRequestError     the request cannot be served as asked (400)
    └── InvalidAudioError   the file is not audio FFmpeg can decode, or holds no sound
"""

from __future__ import annotations

from ..runners.types import InvalidRequestError, RunnerCrashed, RunnerError

__all__ = ["InvalidAudioError", "InvalidRequestError", "RunnerCrashed", "RunnerError"]


class InvalidAudioError(InvalidRequestError):
    """The uploaded file is not audio this runner can decode: the client's fault, never a
    crash, and the runner goes on serving."""
