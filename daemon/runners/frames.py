"""What the daemon and a runner say to each other: one frozen dataclass per frame.

Each frame is a JSON object whose tag names its class: ``"op"`` for a request (daemon to
runner), ``"ev"`` for an event (runner to daemon); every other key is one of the class's
fields, by name. This module alone turns frames into those objects and back (``protocol``
puts the objects on the pipe). Decoding is strict: an unknown tag, a missing or unknown field,
or a value of the wrong type raises :class:`ProtocolError`, so a field one side adds and the
other does not know fails loudly instead of vanishing.

Requests::

    spec      first frame: what to load                   -> loading, then ready or fatal
    generate  a generation (images in ``req`` as base64)  -> token..., then done (or error)
    cancel    stop a generation or an embedding, free its slot
    embed     -> one embedding per input, then result {count, prompt_tokens}
    rerank    -> result {count, prompt_tokens, scores: [...], truncated: [index...]}
    tokenize  -> result [ids]
    status    -> result {slots, busy, queued, memory_bytes...}
    shutdown  exit (closing stdin does the same)

Events: loading, ready (RunnerInfo) or fatal; then, each naming its request's ``id``: token,
done (the DoneEvent's fields beside the id), embedding, result and error.
"""

from __future__ import annotations

import base64
import dataclasses
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from .types import (
    ContextOverflowError,
    DoneEvent,
    GenerateCall,
    InvalidRequestError,
    LlamaBuffer,
    LoraAdapter,
    RunnerError,
    RunnerInfo,
    RunnerSpec,
    SamplingParams,
    TokenEvent,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "CancelOp",
    "DoneEv",
    "EmbedOp",
    "EmbeddingEv",
    "ErrorEv",
    "Event",
    "FatalEv",
    "GenerateOp",
    "LoadingEv",
    "ProtocolError",
    "ReadyEv",
    "Request",
    "RerankOp",
    "ResultEv",
    "ShutdownOp",
    "SpecOp",
    "StatusOp",
    "TokenEv",
    "TokenizeOp",
    "decode_event",
    "decode_request",
    "done_from_wire",
    "encode",
    "generate_from_wire",
    "generate_to_wire",
    "info_from_wire",
    "spec_from_wire",
    "spec_to_wire",
]


_Payload = TypeVar("_Payload", bound="DataclassInstance")  # a contract dataclass in a frame
_Frame = TypeVar("_Frame")  # a request or an event


class ProtocolError(Exception):
    """The other side sent something that is not a frame of this protocol."""


# -- requests -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpecOp:
    TAG: ClassVar[str] = "spec"
    spec: RunnerSpec


@dataclass(frozen=True, slots=True)
class GenerateOp:
    TAG: ClassVar[str] = "generate"
    id: int
    req: GenerateCall


@dataclass(frozen=True, slots=True)
class CancelOp:
    TAG: ClassVar[str] = "cancel"
    id: int


@dataclass(frozen=True, slots=True)
class EmbedOp:
    TAG: ClassVar[str] = "embed"
    id: int
    inputs: tuple[str, ...]
    normalize: bool
    truncate: bool


@dataclass(frozen=True, slots=True)
class RerankOp:
    TAG: ClassVar[str] = "rerank"
    id: int
    query: str
    documents: tuple[str, ...]
    truncate: bool


@dataclass(frozen=True, slots=True)
class TokenizeOp:
    TAG: ClassVar[str] = "tokenize"
    id: int
    text: str
    add_bos: bool
    special: bool


@dataclass(frozen=True, slots=True)
class StatusOp:
    TAG: ClassVar[str] = "status"
    id: int


@dataclass(frozen=True, slots=True)
class ShutdownOp:
    TAG: ClassVar[str] = "shutdown"


Request = SpecOp | GenerateOp | CancelOp | EmbedOp | RerankOp | TokenizeOp | StatusOp | ShutdownOp


# -- events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadingEv:
    TAG: ClassVar[str] = "loading"


@dataclass(frozen=True, slots=True)
class ReadyEv:
    TAG: ClassVar[str] = "ready"
    info: RunnerInfo


@dataclass(frozen=True, slots=True)
class FatalEv:
    """The model could not load; ``invalid``: the request's fault (a bad adapter...)."""

    TAG: ClassVar[str] = "fatal"
    message: str
    invalid: bool


@dataclass(frozen=True, slots=True)
class TokenEv:
    TAG: ClassVar[str] = "token"
    id: int
    text: str
    ids: tuple[int, ...]
    logprobs: tuple[dict[str, Any], ...]  # per token, when the request asked for them

    def event(self) -> TokenEvent:
        return TokenEvent(self.text, self.ids, self.logprobs)


@dataclass(frozen=True, slots=True)
class DoneEv:
    """On the wire the DoneEvent's fields sit beside ``id`` (``_INLINE``)."""

    TAG: ClassVar[str] = "done"
    id: int
    done: DoneEvent


@dataclass(frozen=True, slots=True)
class EmbeddingEv:
    TAG: ClassVar[str] = "embedding"
    id: int
    index: int
    f32: str  # base64 of little-endian float32


@dataclass(frozen=True, slots=True)
class ResultEv:
    TAG: ClassVar[str] = "result"
    id: int
    value: Any  # the answer to embed, rerank, tokenize or status, as JSON


ErrorKind = Literal["context_overflow", "invalid_request", "error"]


@dataclass(frozen=True, slots=True)
class ErrorEv:
    """A request failed; ``kind`` says which :class:`RunnerError` to raise again."""

    TAG: ClassVar[str] = "error"
    id: int
    kind: ErrorKind
    message: str
    prompt_tokens: int = 0  # the three numbers of a context overflow
    context: int = 0
    at_least: bool = False

    @classmethod
    def of(cls, rid: int, exc: RunnerError) -> ErrorEv:
        if isinstance(exc, ContextOverflowError):
            counts = (exc.prompt_tokens, exc.context, exc.at_least)
            return cls(rid, "context_overflow", str(exc), *counts)
        kind: ErrorKind = "invalid_request" if isinstance(exc, InvalidRequestError) else "error"
        return cls(rid, kind, str(exc))

    def error(self) -> RunnerError:
        if self.kind == "context_overflow":
            return ContextOverflowError(self.prompt_tokens, self.context, self.at_least)
        if self.kind == "invalid_request":
            return InvalidRequestError(self.message)
        return RunnerError(self.message)


Event = LoadingEv | ReadyEv | FatalEv | TokenEv | DoneEv | EmbeddingEv | ResultEv | ErrorEv


# -- payloads: the contract's own dataclasses inside a frame -------------------------------


def spec_to_wire(spec: RunnerSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def spec_from_wire(data: dict[str, Any]) -> RunnerSpec:
    adapters = tuple(_exactly(LoraAdapter, adapter) for adapter in _list(data, "adapters"))
    paths = {
        "model_paths": tuple(_list(data, "model_paths")),
        "draft_paths": tuple(_list(data, "draft_paths")),
    }
    return _exactly(RunnerSpec, {**data, **paths, "adapters": adapters})


# GenerateCall's fields that the wire leaves out while they hold their default (most requests)
_OPTIONAL_CALL_KEYS = frozenset(
    {"images", "image_marker", "visible_tokens", "system_chars", "suffix"}
)


def generate_to_wire(req: GenerateCall) -> dict[str, Any]:
    params = dataclasses.asdict(req.params)
    params["logit_bias"] = [[int(k), float(v)] for k, v in req.params.logit_bias.items()]
    message = {"prompt": req.prompt, "add_bos": req.add_bos, "params": params}
    if req.images:
        message["images"] = [base64.b64encode(image).decode() for image in req.images]
        message["image_marker"] = req.image_marker
    if req.visible_tokens:
        message["visible_tokens"] = list(req.visible_tokens)
    if req.system_chars:
        message["system_chars"] = req.system_chars
    if req.suffix is not None:
        message["suffix"] = req.suffix
    return message


def generate_from_wire(data: dict[str, Any]) -> GenerateCall:
    unknown = set(data) - {"prompt", "add_bos", "params"} - _OPTIONAL_CALL_KEYS
    if unknown:
        raise ProtocolError(f"generate request with unknown fields {sorted(unknown)}")
    raw = data["params"]
    bias = {int(k): float(v) for k, v in _list(raw, "logit_bias")}
    params = _exactly(SamplingParams, {**raw, "logit_bias": bias, "stop": tuple(raw["stop"])})
    return GenerateCall(
        prompt=data["prompt"],
        params=params,
        add_bos=data["add_bos"],
        images=tuple(base64.b64decode(image) for image in data.get("images", ())),
        image_marker=data.get("image_marker", ""),
        visible_tokens=tuple(data.get("visible_tokens", ())),
        system_chars=int(data.get("system_chars", 0)),
        suffix=data.get("suffix"),
    )


def done_from_wire(data: dict[str, Any]) -> DoneEvent:
    return _exactly(DoneEvent, data)


def info_from_wire(data: dict[str, Any]) -> RunnerInfo:
    buffers = tuple(_exactly(LlamaBuffer, buffer) for buffer in _list(data, "buffers"))
    return _exactly(RunnerInfo, {**data, "buffers": buffers})


def _exactly(cls: type[_Payload], data: dict[str, Any]) -> _Payload:
    """``cls(**data)``, where ``data`` names every field of ``cls`` and nothing else."""
    if not isinstance(data, dict):
        raise ProtocolError(f"{cls.__name__} is not an object: {data!r:.80}")
    names = {f.name for f in dataclasses.fields(cls)}
    if set(data) != names:
        missing, unknown = sorted(names - set(data)), sorted(set(data) - names)
        raise ProtocolError(f"{cls.__name__}: missing fields {missing}, unknown fields {unknown}")
    return cls(**data)


def _list(data: dict[str, Any], key: str) -> list[Any] | tuple[Any, ...]:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, list | tuple):
        raise ProtocolError(f"{key!r} is not a list: {value!r:.80}")
    return value


# -- the codec ------------------------------------------------------------------------------

_REQUESTS: dict[str, Callable[..., Request]] = {cls.TAG: cls for cls in typing.get_args(Request)}
_EVENTS: dict[str, Callable[..., Event]] = {cls.TAG: cls for cls in typing.get_args(Event)}
# how a payload field is written and read; the DoneEvent's fields sit in the frame itself
_PAYLOADS: dict[type, tuple[Any, Any]] = {
    RunnerSpec: (spec_to_wire, spec_from_wire),
    GenerateCall: (generate_to_wire, generate_from_wire),
    RunnerInfo: (dataclasses.asdict, info_from_wire),
    DoneEvent: (dataclasses.asdict, done_from_wire),
}
_INLINE = (DoneEvent,)
_REQUEST_CLASSES = frozenset(_REQUESTS.values())
# each frame's fields, in order, with their types
_FIELDS: dict[object, tuple[tuple[str, Any], ...]] = {
    cls: tuple((f.name, typing.get_type_hints(cls)[f.name]) for f in dataclasses.fields(cls))
    for cls in (*typing.get_args(Request), *typing.get_args(Event))
}


def encode(frame: Request | Event) -> dict[str, Any]:
    """The JSON object for ``frame``: its tag, then every field."""
    cls = type(frame)
    message: dict[str, Any] = {"op" if cls in _REQUEST_CLASSES else "ev": cls.TAG}
    for name, hint in _FIELDS[cls]:
        value = _encode_value(hint, getattr(frame, name))
        if hint in _INLINE:
            message.update(value)
        else:
            message[name] = value
    return message


def decode_request(message: Any) -> Request:
    return _decode(message, "op", _REQUESTS)


def decode_event(message: Any) -> Event:
    return _decode(message, "ev", _EVENTS)


def _decode(message: Any, key: str, classes: Mapping[str, Callable[..., _Frame]]) -> _Frame:
    if not isinstance(message, dict):
        raise ProtocolError(f"a frame is a JSON object, not {message!r:.80}")
    tag = message.get(key)
    if not isinstance(tag, str) or (cls := classes.get(tag)) is None:
        raise ProtocolError(f"unknown {key} {tag!r}")
    rest = {name: value for name, value in message.items() if name != key}
    values: dict[str, Any] = {}
    for name, hint in _FIELDS[cls]:
        if hint in _INLINE:
            names = {f.name for f in dataclasses.fields(hint)}
            rest[name] = {n: rest.pop(n) for n in list(rest) if n in names}
        if name not in rest:
            raise ProtocolError(f"{key} {tag!r} without its field {name!r}")
        values[name] = _decode_field(tag, name, hint, rest.pop(name))
    if rest:
        raise ProtocolError(f"{key} {tag!r} with unknown fields {sorted(rest)}")
    return cls(**values)


def _decode_field(tag: str, name: str, hint: Any, value: Any) -> Any:
    try:
        return _decode_value(hint, value)
    except ProtocolError as exc:
        raise ProtocolError(f"{tag!r}.{name}: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ProtocolError(f"{tag!r}.{name}: {type(exc).__name__}: {exc}") from None


def _encode_value(hint: Any, value: Any) -> Any:
    if hint in _PAYLOADS:
        return _PAYLOADS[hint][0](value)
    if typing.get_origin(hint) is tuple:
        return list(value)
    return value


def _decode_value(hint: Any, value: Any) -> Any:
    if hint in _PAYLOADS:
        return _PAYLOADS[hint][1](value)
    if hint is Any:
        return value
    if typing.get_origin(hint) is Literal:
        if value not in typing.get_args(hint):
            raise ProtocolError(f"expected one of {typing.get_args(hint)}, got {value!r:.80}")
        return value
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list):
            raise ProtocolError(f"expected a list, got {value!r:.80}")
        item = typing.get_args(hint)[0]
        return tuple(_decode_value(item, each) for each in value)
    kind: type = dict if typing.get_origin(hint) is dict else hint  # ``dict[str, Any]``
    if not _is_a(value, kind):
        raise ProtocolError(f"expected {kind.__name__}, got {value!r:.80}")
    return value


def _is_a(value: Any, hint: type) -> bool:
    """JSON's types: a bool is no int here, and an int is a float."""
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)
