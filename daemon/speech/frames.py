"""What the daemon and a speech runner say to each other: one frozen dataclass per frame.

The frames travel as the other runners' do (``daemon.runners.protocol``: a 4-byte length,
then UTF-8 JSON), tagged ``"op"`` (daemon to runner) or ``"ev"`` (runner to daemon); every
other key is a field, by name, and audio bytes travel as base64. Decoding is strict: an
unknown tag, a missing or unknown field, or a value of the wrong type raises
:class:`ProtocolError`, so a field one side adds and the other does not know fails loudly.

Requests::

    spec      first frame: what to load            -> ready, or fatal (and the runner exits)
    speak     one text; served in order            -> audio..., then done (or error)
    cancel    drop a queued request, or stop a running one before its next sentence
    shutdown  exit (closing stdin does the same)

Events after ready name their request's ``id``. ``AudioChunk`` and ``SpeechDone`` are also
what ``SpeakerProcess.speak`` yields.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar, Union

from ..runners.frames import ProtocolError

__all__ = [
    "MAX_SPEED",
    "MIN_SPEED",
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


@dataclass(frozen=True, slots=True)
class CancelOp:
    TAG: ClassVar[str] = "cancel"
    id: int


@dataclass(frozen=True, slots=True)
class ShutdownOp:
    TAG: ClassVar[str] = "shutdown"


Request = SpecOp | SpeakOp | CancelOp | ShutdownOp


# -- events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadyEv:
    TAG: ClassVar[str] = "ready"
    info: SpeakerInfo


@dataclass(frozen=True, slots=True)
class FatalEv:
    """The voice could not be loaded; the runner exits."""

    TAG: ClassVar[str] = "fatal"
    message: str


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

_Frame = TypeVar("_Frame")
_REQUESTS: dict[str, type[Request]] = {cls.TAG: cls for cls in typing.get_args(Request)}
_EVENTS: dict[str, type[Event]] = {cls.TAG: cls for cls in typing.get_args(Event)}


def encode(frame: Request | Event) -> dict[str, Any]:
    """The JSON object for ``frame``: its tag, then every field."""
    key = "op" if _REQUESTS.get(frame.TAG) is type(frame) else "ev"
    return {key: frame.TAG, **_encode_value(frame)}


def decode_request(message: Any) -> Request:
    return _decode(message, "op", _REQUESTS)


def decode_event(message: Any) -> Event:
    return _decode(message, "ev", _EVENTS)


def _decode(message: Any, key: str, classes: dict[str, type[_Frame]]) -> _Frame:
    if not isinstance(message, dict):
        raise ProtocolError(f"a frame is a JSON object, not {message!r:.80}")
    tag = message.get(key)
    if not isinstance(tag, str) or (cls := classes.get(tag)) is None:
        raise ProtocolError(f"unknown {key} {tag!r}")
    fields = {name: value for name, value in message.items() if name != key}
    try:
        return typing.cast("_Frame", _decode_value(cls, fields))
    except ProtocolError as exc:
        raise ProtocolError(f"{key} {tag!r}: {exc}") from None


def _encode_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _decode_value(hint: Any, value: Any) -> Any:
    """``value`` read as ``hint`` says: a dataclass from an object naming exactly its fields,
    bytes from base64, a literal, an optional, or one of JSON's plain types."""
    if dataclasses.is_dataclass(hint):
        return _decode_dataclass(typing.cast("type[Any]", hint), value)
    origin = typing.get_origin(hint)
    if origin is Literal:
        if value not in typing.get_args(hint):
            raise ProtocolError(f"expected one of {typing.get_args(hint)}, got {value!r:.80}")
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in typing.get_args(hint):
            return None
        (kind,) = (arg for arg in typing.get_args(hint) if arg is not type(None))
        return _decode_value(kind, value)
    if hint is bytes:
        return _bytes(value)
    return _plain(hint, value)


def _decode_dataclass(cls: type[Any], value: Any) -> Any:
    if not isinstance(value, dict):
        raise ProtocolError(f"{cls.__name__} is not an object: {value!r:.80}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    if set(value) != set(names):
        missing, unknown = sorted(set(names) - set(value)), sorted(set(value) - set(names))
        raise ProtocolError(f"{cls.__name__}: missing fields {missing}, unknown fields {unknown}")
    try:
        return cls(**{name: _decode_value(hints[name], value[name]) for name in names})
    except ProtocolError as exc:
        raise ProtocolError(f"{cls.__name__}: {exc}") from None


def _bytes(value: Any) -> bytes:
    """Bytes, sent as base64 text."""
    if not isinstance(value, str):
        raise ProtocolError(f"expected base64 text, got {value!r:.80}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ProtocolError("expected base64 text") from None


def _plain(hint: Any, value: Any) -> Any:
    """JSON's types: a bool is no int here, an int is a float (and becomes one)."""
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint in (str, bool) and isinstance(value, hint):
        return value
    raise ProtocolError(f"expected {getattr(hint, '__name__', hint)}, got {value!r:.80}")
