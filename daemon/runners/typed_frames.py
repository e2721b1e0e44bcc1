"""A strict JSON codec for frames that are frozen dataclasses, one class per tag.

A runner's frames (``daemon.transcription.frames``, ``daemon.speech.frames``) are a union of
requests and a union of events; each class names its tag in ``TAG``. A frame travels as a
JSON object: ``"op"`` (a request) or ``"ev"`` (an event) holds its tag, every other key is a
field, by name; tuples travel as lists and bytes as base64 text. Decoding is strict: an
unknown tag, a missing or unknown field, or a value of the wrong type raises
:class:`ProtocolError`, so a field one side adds and the other does not know fails loudly
instead of vanishing.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import types
import typing
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, Union

from .frames import ProtocolError

__all__ = ["FrameCodec", "ProtocolError", "Tagged"]


class Tagged(Protocol):
    """A frame: a dataclass whose class names its tag."""

    TAG: ClassVar[str]


_Request = TypeVar("_Request", bound=Tagged)
_Event = TypeVar("_Event", bound=Tagged)
_Frame = TypeVar("_Frame")


class FrameCodec(Generic[_Request, _Event]):
    """Encodes and decodes the frames of one runner: ``requests`` and ``events`` are the
    unions (``SpecOp | CancelOp | ...``) whose members are its frame classes."""

    def __init__(self, requests: Any, events: Any):
        self._requests: dict[str, type[_Request]] = _by_tag(requests)
        self._events: dict[str, type[_Event]] = _by_tag(events)

    def encode(self, frame: Tagged) -> dict[str, Any]:
        """The JSON object for ``frame``: its tag, then every field."""
        key = "op" if self._requests.get(frame.TAG) is type(frame) else "ev"
        return {key: frame.TAG, **_encode_value(frame)}

    def decode_request(self, message: Any) -> _Request:
        return _decode(message, "op", self._requests)

    def decode_event(self, message: Any) -> _Event:
        return _decode(message, "ev", self._events)


def _by_tag(union: Any) -> dict[str, Any]:
    return {cls.TAG: cls for cls in typing.get_args(union)}


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
    if isinstance(value, tuple):
        return [_encode_value(each) for each in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _decode_value(hint: Any, value: Any) -> Any:
    """``value`` read as ``hint`` says: a dataclass from an object naming exactly its fields,
    a tuple from a list, bytes from base64, a literal, an optional, or one of JSON's plain
    types."""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return _decode_dataclass(typing.cast("type[Any]", hint), value)
    if origin is Literal:
        if value not in typing.get_args(hint):
            raise ProtocolError(f"expected one of {typing.get_args(hint)}, got {value!r:.80}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise ProtocolError(f"expected a list, got {value!r:.80}")
        return tuple(_decode_value(typing.get_args(hint)[0], each) for each in value)
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


def _plain(hint: Any, value: Any) -> Any:
    """JSON's types: a bool is no int here, an int is a float (and becomes one)."""
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint in (str, bool) and isinstance(value, hint):
        return value
    raise ProtocolError(f"expected {getattr(hint, '__name__', hint)}, got {value!r:.80}")


def _bytes(value: Any) -> bytes:
    """Bytes, sent as base64 text."""
    if not isinstance(value, str):
        raise ProtocolError(f"expected base64 text, got {value!r:.80}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ProtocolError("expected base64 text") from None
