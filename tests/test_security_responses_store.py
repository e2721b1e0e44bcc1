"""The Responses store is bounded for real: one record (a whole previous_response_id chain) is
at most ``max_record`` bytes, counted as UTF-8, all of them at most ``max_bytes``; the copy and
the count happen in a worker thread, never on the event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from localllm.daemon.api.openai_responses import ResponseObject
from localllm.daemon.errors import NotFoundError
from localllm.daemon.server import create_app
from localllm.daemon.server.openai.response_store import ResponseStore, StoredResponse
from tests.support.in_process import app_client, app_settings


def response(number: int) -> ResponseObject:
    return ResponseObject(id=f"resp_{number}", created_at=0, status="completed", model="m")


def test_a_record_over_its_cap_is_not_kept_and_a_follow_up_says_why():
    store = ResponseStore(max_record=100_000)
    store.put(StoredResponse.of(response(1), [{"role": "user", "content": "x" * 200_000}], []))
    assert len(store) == 0
    with pytest.raises(NotFoundError, match=r"was not stored: its conversation is 0\.2 MiB, over"):
        asyncio.run(store.get("resp_1"))


def test_a_growing_chain_stays_within_the_bounds():
    """Each turn carries the whole chain, and a turn's reasoning items cost no context: the
    chain stops being kept at ``max_record``, and all records stay under ``max_bytes``."""
    store = ResponseStore(max_bytes=1_000_000, max_record=300_000)
    messages: list[dict] = []
    for turn in range(20):
        messages = [*messages, {"role": "assistant", "thinking": "t" * 50_000, "content": "ok"}]
        store.put(StoredResponse.of(response(turn), messages, []))
        assert store._bytes <= store.max_bytes  # the bound itself
    kept = [asyncio.run(store.get(f"resp_{turn}")) for turn in range(20) if turn < 5]
    assert all(record.size <= 300_000 for record in kept)
    with pytest.raises(NotFoundError, match="not stored"):
        asyncio.run(store.get("resp_19"))


def test_sizes_are_utf8_bytes():
    text = "\u00e9" * 100_000  # 200,000 bytes of UTF-8 (600,000 as \\u00e9 escapes)
    record = StoredResponse.of(response(1), [{"role": "user", "content": text}], [b"\x00" * 1000])
    assert 201_000 <= record.size < 203_000


class _Probe:
    """A value in a conversation that notes which thread copies it."""

    copied_on: list[str] = []

    def __deepcopy__(self, memo):
        _Probe.copied_on.append(threading.current_thread().name)
        return self


def test_the_copy_is_made_off_the_event_loop():
    store = ResponseStore()

    async def finish() -> StoredResponse:
        store.keep(response(1), [{"role": "user", "content": "hi", "probe": _Probe()}], [])
        return await store.get("resp_1")  # waits until it is kept

    record = asyncio.run(finish())
    assert record.messages[0]["content"] == "hi"
    assert _Probe.copied_on and threading.main_thread().name not in _Probe.copied_on


def test_a_chain_past_the_cap_through_the_api(tmp_path, tiny_model_path):
    app = create_app(app_settings(tmp_path, {"tiny": tiny_model_path}))
    app.state.responses = ResponseStore(max_record=400_000)
    dropped = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "r" * 150_000}]}
    body = {"model": "tiny", "max_output_tokens": 2}
    with app_client(app) as client:
        previous = None
        for _ in range(3):  # 150 KB of reasoning a turn: the third turn's chain is too big
            items = [
                {"type": "message", "role": "user", "content": "hi"},
                dropped,  # the thinking of the assistant message after it
                {"type": "message", "role": "assistant", "content": "ok"},
                {"type": "message", "role": "user", "content": "and?"},
            ]
            answer = client.post(
                "/v1/responses", json={**body, "input": items, "previous_response_id": previous}
            )
            assert answer.status_code == 200, answer.text[:300]
            previous = answer.json()["id"]
        follow_up = client.post(
            "/v1/responses", json={**body, "input": "hi", "previous_response_id": previous}
        )
        assert follow_up.status_code == 404
        assert "was not stored: its conversation is" in follow_up.json()["error"]["message"]
