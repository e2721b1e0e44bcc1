"""What the daemon and a speech runner say to each other: one frozen dataclass per frame.

The frames travel as the other runners' do (``daemon.runners.protocol``: a 4-byte length,
then UTF-8 JSON), tagged ``"op"`` (daemon to runner) or ``"ev"`` (runner to daemon); every
other key is a field, by name, and audio bytes travel as base64. Decoding is strict: an
unknown tag, a missing or unknown field, or a value of the wrong type raises
:class:`ProtocolError`, so a field one side adds and the other does not know fails loudly
(the codec: ``daemon.runners.typed_frames``; ``cancel``, ``shutdown`` and ``fatal`` are the
ones every such runner shares, from ``daemon.runners.child_frames``).

Requests::

    spec      first frame: what to load            -> ready, or fatal (and the runner exits)
    speak     one text; served in order            -> audio..., then done (or error)
    cancel    drop a queued request, or stop a running one before its next sentence
    shutdown  exit (closing stdin does the same)

Events after ready name their request's ``id``. ``AudioChunk`` and ``SpeechDone`` are also
what ``SpeakerProcess.speak`` yields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ..runners.child_frames import CancelOp, ChildWire, FatalEv, ShutdownOp
from ..runners.typed_frames import FrameCodec, ProtocolError

__all__ = [
    "CODEC",
    "MAX_SPEED",
    "MIN_SPEED",
    "WIRE",
    "AudioChunk",
    "CancelOp",
    "Device",
    "ErrorEv",
    "ErrorKind",
    "Event",
    "FatalEv",
    "ProtocolError",
    "ReadyEv",
    "Request",
    "ShutdownOp",
    "SpeakOp",
    "SpeakRequest",
    "SpeakerInfo",
    "SpeakerSpec",
    "SpecOp",
    "SpeechDone",
    "SpeechEvent",
    "decode_event",
    "decode_request",
    "encode",
]

Device = Literal["cpu", "auto"]  # "auto": CUDA where onnxruntime has it, else the CPU
# Why a request failed: one the voice cannot serve as asked (no text, a speed out of
# bounds), or anything else (the runner's log says more).
ErrorKind = Literal["invalid_request", "internal"]
MIN_SPEED, MAX_SPEED = 0.25, 4.0  # OpenAI's bounds for ``speed``


# -- payloads -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpeakerSpec:
    """What to load: a Piper voice (a folder holding ``<voice>.onnx`` and its
    ``<voice>.onnx.json``), where and how."""

    model_path: str
    device: Device = "cpu"
    threads: int = 0  # onnxruntime's threads; 0: its default (one per core)
    model_name: str = ""  # for messages; "": the folder's name


@dataclass(frozen=True, slots=True)
class SpeakerInfo:
    """What the runner reports once its voice is loaded."""

    sample_rate: int  # of the 16-bit mono PCM it sends, in Hz
    language: str  # "en_US", as the voice's config names it
    speakers: int  # a voice trained on many speakers (this one speaks as its first)
    device: str  # "cpu" or "cuda", as onnxruntime runs it
    load_seconds: float
    memory_bytes: int  # resident memory of the runner after the load
    pid: int


@dataclass(frozen=True, slots=True)
class SpeakRequest:
    text: str
    speed: float = 1.0  # 2.0 speaks twice as fast (Piper's length_scale halved)


# -- requests -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpecOp:
    TAG: ClassVar[str] = "spec"
    spec: SpeakerSpec


@dataclass(frozen=True, slots=True)
class SpeakOp:
    TAG: ClassVar[str] = "speak"
    id: int
    request: SpeakRequest


Request = SpecOp | SpeakOp | CancelOp | ShutdownOp


# -- events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadyEv:
    TAG: ClassVar[str] = "ready"
    info: SpeakerInfo


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """Speech as soon as the voice has made it: 16-bit little-endian mono PCM at the voice's
    sample rate (a sentence, or a part of a long one)."""

    TAG: ClassVar[str] = "audio"
    id: int  # the request's
    index: int  # the chunk's place in the speech, from 0
    pcm: bytes


@dataclass(frozen=True, slots=True)
class SpeechDone:
    TAG: ClassVar[str] = "done"
    id: int
    samples: int  # of all the chunks
    seconds: float  # time the runner took, from the text to the last chunk
    chunks: int


@dataclass(frozen=True, slots=True)
class ErrorEv:
    """A request failed; the runner goes on serving the next."""

    TAG: ClassVar[str] = "error"
    id: int
    kind: ErrorKind
    message: str


SpeechEvent = AudioChunk | SpeechDone  # what callers see
Event = ReadyEv | FatalEv | AudioChunk | SpeechDone | ErrorEv


# -- the codec ------------------------------------------------------------------------------

CODEC: FrameCodec[Request, Event] = FrameCodec(Request, Event)
WIRE: ChildWire[SpeakerSpec, SpeakerInfo, Request, Event] = ChildWire(
    CODEC, spec=SpecOp, ready=ReadyEv, failed=ErrorEv, error=ErrorEv
)

encode = CODEC.encode  # the JSON object for a frame: its tag, then every field
decode_request = CODEC.decode_request
decode_event = CODEC.decode_event
