"""The runner's frames: every one survives the wire whole, and nothing else is taken for one.

The frames are found from the ``Request`` and ``Event`` unions and filled field by field from
their types, so a frame or a field added later is covered here without a new line.
"""

from __future__ import annotations

import dataclasses
import io
import types
import typing
from typing import Any

import pytest

from localllm.daemon.inference.thinking_run import add_parts
from localllm.daemon.runners.frames import (
    DoneEv,
    ErrorEv,
    Event,
    ProtocolError,
    Request,
    TokenEv,
    decode_event,
    decode_request,
    encode,
)
from localllm.daemon.runners.protocol import FrameReader, encode_frame
from localllm.daemon.runners.types import DoneEvent

REQUESTS = typing.get_args(Request)
EVENTS = typing.get_args(Event)
FRAMES = (*REQUESTS, *EVENTS)


def sample(hint: Any, seed: int) -> Any:
    """A value of type ``hint`` that no default holds, different for each ``seed``."""
    if dataclasses.is_dataclass(hint):
        return filled(hint, seed)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is types.UnionType or origin is typing.Union:
        return sample(next(a for a in args if a is not type(None)), seed)
    if origin is typing.Literal:  # one of the values after the first (the default, if any)
        rest = args[1:] or args
        return rest[seed % len(rest)]
    if origin is tuple:
        return (sample(args[0], seed), sample(args[0], seed + 1))
    if origin is dict:
        return {sample(args[0], seed): sample(args[1], seed + 1)}
    made = {
        bool: lambda n: True,
        int: lambda n: 1000 + n,
        float: lambda n: n + 0.5,
        str: lambda n: f"s{n} é",
        bytes: lambda n: bytes([n % 256, 0, 255]),
        dict: lambda n: {"token": f"t{n}", "logprob": -0.5},
        Any: lambda n: {"answer": [n, "x"]},
    }
    assert hint in made, f"say in sample() how to fill a {hint}"
    return made[hint](seed)


def filled(cls: type, seed: int = 0) -> Any:
    """``cls`` with every field set, none to its default."""
    hints = typing.get_type_hints(cls)
    values = {}
    for index, field in enumerate(dataclasses.fields(cls)):
        value = sample(hints[field.name], seed + index * 10)
        if value == field.default:
            value = not value if isinstance(value, bool) else pytest.fail(field.name)
        values[field.name] = value
    return cls(**values)


def through_the_wire(frame: Any) -> Any:
    message = FrameReader(io.BytesIO(encode_frame(encode(frame)))).read()
    return decode_request(message) if "op" in message else decode_event(message)


@pytest.mark.parametrize("cls", FRAMES, ids=lambda cls: cls.__name__)
def test_every_frame_survives_the_wire_with_every_field(cls):
    frame = filled(cls)
    assert through_the_wire(frame) == frame


def test_a_done_frame_keeps_every_field_of_its_done_event():
    done = filled(DoneEvent)
    for field in dataclasses.fields(DoneEvent):
        assert getattr(done, field.name) != field.default, field.name
    assert through_the_wire(DoneEv(7, done)) == DoneEv(7, done)
    message = encode(DoneEv(7, done))  # beside the id, as the wire always had it
    assert {f.name for f in dataclasses.fields(DoneEvent)} | {"ev", "id"} == set(message)


def test_the_tags_are_the_ones_on_the_wire():
    assert {cls.TAG for cls in REQUESTS} >= {"spec", "generate", "cancel", "embed", "rerank"}
    assert {cls.TAG for cls in EVENTS} >= {"loading", "ready", "token", "done", "result", "error"}
    assert all(encode(filled(cls))["op"] == cls.TAG for cls in REQUESTS)
    assert all(encode(filled(cls))["ev"] == cls.TAG for cls in EVENTS)


def decoder(cls: type):
    return decode_request if cls in REQUESTS else decode_event


@pytest.mark.parametrize("cls", FRAMES, ids=lambda cls: cls.__name__)
def test_an_unknown_or_missing_field_is_refused(cls):
    message = encode(filled(cls))
    with pytest.raises(ProtocolError, match="unknown"):
        decoder(cls)({**message, "surprise": 1})
    for name in set(message) - {"op", "ev"}:
        with pytest.raises(ProtocolError):
            decoder(cls)({key: value for key, value in message.items() if key != name})


def test_an_unknown_tag_is_refused():
    with pytest.raises(ProtocolError, match="unknown op"):
        decode_request({"op": "reticulate", "id": 1})
    with pytest.raises(ProtocolError, match="unknown ev"):
        decode_event({"ev": "reticulated", "id": 1})
    with pytest.raises(ProtocolError):  # an event is not a request, and the other way round
        decode_request({"ev": "loading"})
    with pytest.raises(ProtocolError):
        decode_event({"op": "shutdown"})
    with pytest.raises(ProtocolError):
        decode_event(["ev", "loading"])


@pytest.mark.parametrize("cls", FRAMES, ids=lambda cls: cls.__name__)
def test_a_field_inside_a_payload_is_checked_too(cls):
    """The spec, the generate call, the ready info and the done event are strict as well."""
    message = encode(filled(cls))
    for name, value in message.items():
        if isinstance(value, dict) and cls.__name__ != "ResultEv":
            with pytest.raises(ProtocolError, match="unknown"):
                decoder(cls)({**message, name: {**value, "surprise": 1}})


def test_a_value_of_the_wrong_type_is_refused():
    token = encode(filled(TokenEv))
    for wrong in ({"id": "1"}, {"id": True}, {"ids": "12"}, {"ids": [1.5]}, {"text": None}):
        with pytest.raises(ProtocolError):
            decode_event({**token, **wrong})


def test_an_error_of_an_unknown_kind_is_refused():
    """A kind the daemon does not know would be raised again as the wrong error."""
    error = encode(filled(ErrorEv))
    assert decode_event({**error, "kind": "invalid_request"}).kind == "invalid_request"
    with pytest.raises(ProtocolError, match="expected one of"):
        decode_event({**error, "kind": "context overflow"})


def test_add_parts_keeps_every_field():
    """A field of either part that add_parts does not look at would be dropped: changing any
    field of the part it is taken from must change the whole."""
    first, second = filled(DoneEvent, 100), filled(DoneEvent, 200)  # no two fields alike
    total = add_parts(first, second)
    hints = typing.get_type_hints(DoneEvent)
    for field in dataclasses.fields(DoneEvent):
        other = sample(hints[field.name], 999)
        changed_first = add_parts(dataclasses.replace(first, **{field.name: other}), second)
        changed_second = add_parts(first, dataclasses.replace(second, **{field.name: other}))
        assert total != changed_first or total != changed_second, field.name
