"""An uploaded file read as 16 kHz mono samples, with errors that say what is wrong with it.

PyAV (FFmpeg) reads any container and codec it knows. faster-whisper takes the whole recording
as one float32 array, so the whole file is decoded into memory: 230 MB an hour of audio (and,
while decoding, the 16-bit buffer it is converted from, 115 MB an hour). Its features are
computed in slices (``features``), so that is most of what a long file costs.
"""

from __future__ import annotations

from typing import cast

import av
import numpy as np
import numpy.typing as npt
from faster_whisper.audio import decode_audio  # type: ignore[import-untyped]

from .failure import RequestFailure

__all__ = ["read_audio"]


def read_audio(path: str, sampling_rate: int) -> npt.NDArray[np.float32]:
    """The samples of ``path``'s first audio stream; RequestFailure when it has none."""
    try:
        with av.open(path, metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise RequestFailure("invalid_audio", "the file holds no audio stream")
        samples = cast("npt.NDArray[np.float32]", decode_audio(path, sampling_rate))
    except FileNotFoundError:
        raise RequestFailure("invalid_request", f"no audio file at {path}") from None
    except av.error.FFmpegError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RequestFailure("invalid_audio", f"the file is not audio ({reason})") from None
    if not samples.size:
        raise RequestFailure("invalid_audio", "the file holds no sound")
    return samples
