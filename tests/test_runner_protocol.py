"""The pieces that need no model: framing, request translation, text streaming, slot choice."""

from __future__ import annotations

import asyncio
import io
import struct
from dataclasses import replace

import pytest

from localllm.daemon.runners.frames import (
    ErrorEv,
    decode_event,
    encode,
    generate_from_wire,
    generate_to_wire,
    spec_from_wire,
    spec_to_wire,
)
from localllm.daemon.runners.protocol import (
    MAX_FRAME_BYTES,
    FrameReader,
    ProtocolError,
    encode_frame,
    read_frame,
)
from localllm.daemon.runners.types import (
    ContextOverflowError,
    GenerateCall,
    LoraAdapter,
    RunnerError,
    RunnerSpec,
    SamplingParams,
)
from localllm.daemon.runners.worker.slots import Slot, common_prefix, pick_slot
from localllm.daemon.runners.worker.text import TextStream


def _async_read(data: bytes):
    async def read():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return [await read_frame(reader), await read_frame(reader)]

    return asyncio.run(read())


def test_frames_round_trip_both_ways():
    message = {"op": "generate", "id": 7, "text": "héllo ✓"}
    data = encode_frame(message)
    assert struct.unpack(">I", data[:4])[0] == len(data) - 4
    assert _async_read(data) == [message, None]
    assert FrameReader(io.BytesIO(data + data)).read() == message


def test_truncated_and_oversized_frames_are_rejected():
    data = encode_frame({"x": 1})
    with pytest.raises(ProtocolError):
        _async_read(data[:-1])
    with pytest.raises(ProtocolError):
        FrameReader(io.BytesIO(data[:2])).read()
    with pytest.raises(ProtocolError):
        FrameReader(io.BytesIO(struct.pack(">I", MAX_FRAME_BYTES + 1))).read()
    with pytest.raises(ProtocolError):
        encode_frame({"x": "y" * MAX_FRAME_BYTES})


def test_requests_survive_the_wire():
    params = SamplingParams(
        logit_bias={5: -float("inf"), 9: 2.5}, stop=("\n\n",), seed=3, logprobs=2
    )
    req = GenerateCall("<|im_start|>user\nhi", params, add_bos=False, system_chars=12)
    assert generate_from_wire(decode(generate_to_wire(req))) == req
    spec = RunnerSpec("m", ("/a-00001-of-00002.gguf", "/a-00002-of-00002.gguf"), num_ctx=8192)
    assert spec_from_wire(decode(spec_to_wire(spec))) == spec
    adapted = replace(spec, adapters=(LoraAdapter("/l.gguf"), LoraAdapter("/s.gguf", -0.5)))
    assert spec_from_wire(decode(spec_to_wire(adapted))) == adapted
    images = GenerateCall("a <m> b <m>", images=(b"\x89PNG\x00", b"\xff\xd8"), image_marker="<m>")
    assert generate_from_wire(decode(generate_to_wire(images))) == images


def decode(message: dict) -> dict:
    return FrameReader(io.BytesIO(encode_frame(message))).read()


def error_through_the_wire(exc: RunnerError) -> RunnerError:
    return decode_event(decode(encode(ErrorEv.of(3, exc)))).error()


def test_errors_keep_their_type():
    overflow = error_through_the_wire(ContextOverflowError(5000, 4096))
    assert isinstance(overflow, ContextOverflowError)
    assert (overflow.prompt_tokens, overflow.context, overflow.at_least) == (5000, 4096, False)
    floor = error_through_the_wire(ContextOverflowError(9000, 4096, True))
    assert floor.at_least and "the prompt is at least 9000 tokens" in str(floor)
    plain = error_through_the_wire(RunnerError("bad grammar"))
    assert type(plain) is RunnerError and str(plain) == "bad grammar"


def test_frames_carry_text_as_utf8_not_ascii_escapes():
    prompt = "\u00e9" * 1000 + "\U0001f642"
    frame = encode_frame({"prompt": prompt})
    assert len(frame) < 2 * 1000 + 100  # escaped, each "é" took 6 bytes ("\\u00e9")
    assert decode({"prompt": prompt}) == {"prompt": prompt}
    # JSON lets a client send a lone surrogate ("\\ud800"); it cannot be UTF-8: U+FFFD
    assert decode({"prompt": "a\ud800b"}) == {"prompt": "a\ufffdb"}


def test_text_stream_joins_split_utf8():
    stream = TextStream()
    data = "é✓🙂".encode()
    out = [stream.push(data[i : i + 1]) for i in range(len(data))]
    assert "".join(out) == "é✓🙂"
    assert all(piece in ("", "é", "✓", "🙂") for piece in out)
    assert stream.push(b"\xff") == "\ufffd"  # invalid bytes become U+FFFD, never an error


def test_text_stream_holds_back_a_possible_stop_string():
    stream = TextStream(stops=("</end>",))
    assert stream.push(b"Hello <") == "Hello "
    assert stream.push(b"/e") == ""
    assert stream.push(b"x") == "</ex"  # not the stop string after all
    assert stream.push(b" bye </en") == " bye "
    assert stream.push(b"d> ignored") == ""
    assert stream.stopped and stream.matched == "</end>"


def test_text_stream_flushes_held_text_at_the_end():
    stream = TextStream(stops=("STOP",))
    assert stream.push(b"abc ST") == "abc "
    assert stream.flush() == "ST"
    assert not stream.stopped and stream.matched is None


def test_text_stream_picks_the_earliest_stop():
    stream = TextStream(stops=("b", "xa"))
    assert stream.push(b"..xab") == ".."
    assert stream.stopped and stream.matched == "xa"


def test_slot_choice_prefers_the_longest_prefix_then_the_oldest():
    a, b, c = Slot(0, [1, 2, 3, 4], last_used=5), Slot(1, [1, 2, 9], last_used=1), Slot(2)
    long = list(range(100))
    a.cached = [*long, 1]
    assert pick_slot([a, b, c], [*long, 7], set()) == (a, 100)
    assert pick_slot([a, b, c], [8], set()) == (c, 0)
    assert pick_slot([b, c], [1, 2, 9], set()) == (b, 3)


def test_slot_choice_keeps_busy_sequence_ids_consecutive():
    """llama.cpp decodes ids 0,1,2 in one pass but 0,2 in two: fill the hole first."""
    slots = [Slot(i, last_used=i) for i in range(5)]
    free = [slots[1], slots[4]]
    assert pick_slot(free, [5, 6], busy={0, 2, 3})[0] is slots[1]
    slots[4].cached = list(range(200))  # a long shared prefix still wins
    assert pick_slot(free, list(range(150)), busy={0, 2, 3}) == (slots[4], 150)
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix(list(range(1000)), [*range(500), -1]) == 500
