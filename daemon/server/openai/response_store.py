"""The responses the daemon keeps for ``previous_response_id`` and ``GET /v1/responses/{id}``.

Kept in memory only, bounded (the newest ``max_count``, at most ``max_bytes`` together; the
oldest go first), and gone when the daemon stops. A conversation is private text the user may
not expect on disk, and a local agent chains responses within one session, so nothing is
written anywhere. Each record holds its whole conversation (inputs and reply, not the
instructions), so a chain keeps working when an older link is evicted or deleted; its size
counts that conversation in full, as UTF-8, images included, even where records share them.

One record is at most ``max_record`` bytes: a chain grows by a turn's inputs each time (up to
a body's 32 MiB, in reasoning items the template drops and no context counts), so past that a
response is answered but not kept, and a follow-up says why. Copying a conversation and
measuring it take time in proportion to its size, so ``keep`` does both in a worker thread;
``get`` waits for a response still being kept.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from localllm.daemon.api.openai_responses import ResponseObject
from localllm.daemon.errors import NotFoundError

__all__ = ["ResponseStore", "StoredResponse", "conversation_bytes"]

MAX_COUNT = 1000
MAX_BYTES = 256 << 20
MAX_RECORD = 64 << 20


def conversation_bytes(value: object) -> int:
    """What ``value`` (messages: dicts, lists, strings, numbers) takes as UTF-8 text, walked
    once; a string is measured without encoding it when it is ASCII."""
    size, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            size += len(item) if item.isascii() else len(item.encode(errors="surrogatepass"))
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
        elif isinstance(item, bytes):
            size += len(item)
        else:
            size += 8  # a number, a bool, None
    return size


@dataclass(frozen=True, slots=True)
class StoredResponse:
    response: ResponseObject
    messages: tuple[Mapping[str, object], ...]  # the conversation, as the templates read it
    images: tuple[bytes, ...]  # the images its messages' image parts name, in order
    size: int

    @classmethod
    def of(
        cls,
        response: ResponseObject,
        messages: Sequence[Mapping[str, object]],
        images: Sequence[bytes],
    ) -> StoredResponse:
        """A copy of the conversation (later requests must not change it), measured."""
        kept = tuple(copy.deepcopy(list(messages)))
        size = len(response.model_dump_json().encode(errors="surrogatepass"))
        size += conversation_bytes(kept) + sum(map(len, images))
        return cls(response, kept, tuple(images), size)


class ResponseStore:
    """Stored responses by id, newest last (one per app, on ``app.state.responses``)."""

    def __init__(
        self, max_count: int = MAX_COUNT, max_bytes: int = MAX_BYTES, max_record: int = MAX_RECORD
    ):
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.max_record = max_record
        self._records: OrderedDict[str, StoredResponse] = OrderedDict()
        self._too_big: OrderedDict[str, int] = OrderedDict()  # id -> size, of some refused
        self._pending: dict[str, Future[StoredResponse]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="responses-store")  # in order

    def __len__(self) -> int:
        return len(self._records)

    def keep(
        self,
        response: ResponseObject,
        messages: Sequence[Mapping[str, object]],
        images: Sequence[bytes],
    ) -> None:
        """Store ``response`` with its conversation, copied and measured in a worker thread."""
        with self._lock:
            future = self._worker.submit(StoredResponse.of, response, messages, images)
            self._pending[response.id] = future
        future.add_done_callback(lambda done: self._settle(response.id, done))

    def _settle(self, response_id: str, done: Future[StoredResponse]) -> None:
        with self._lock:
            if self._pending.get(response_id) is done:
                del self._pending[response_id]
                if done.exception() is None:
                    self._put(done.result())

    def put(self, record: StoredResponse) -> None:
        """Keep ``record`` (already copied and measured), evicting the oldest to stay within
        bounds; a record over ``max_record`` is not kept."""
        with self._lock:
            self._put(record)

    def _put(self, record: StoredResponse) -> None:
        self._drop(record.response.id)
        if record.size > self.max_record:
            self._too_big[record.response.id] = record.size
            while len(self._too_big) > self.max_count:
                self._too_big.popitem(last=False)
            return
        self._records[record.response.id] = record
        self._bytes += record.size
        while len(self._records) > self.max_count or self._bytes > self.max_bytes:
            self._drop(next(iter(self._records)))

    async def get(self, response_id: str) -> StoredResponse:
        """The stored response (once it is stored, if it was still being kept)."""
        pending = self._pending.get(response_id)
        if pending is not None:
            await asyncio.wrap_future(pending)
            self._settle(response_id, pending)
        with self._lock:
            record = self._records.get(response_id)
            too_big = self._too_big.get(response_id)
        if record is not None:
            return record
        if too_big is not None:
            raise NotFoundError(
                f"response {response_id!r} was not stored: its conversation is "
                f"{too_big / 2**20:,.1f} MiB, over the {self.max_record >> 20} MiB a stored "
                "response may hold; start a new conversation (or send the history as input)"
            )
        raise NotFoundError(
            f"response {response_id!r} not found: it was not stored (store: false), was "
            f"deleted, or is older than the newest {self.max_count} this daemon keeps "
            "in memory since it started"
        )

    async def delete(self, response_id: str) -> None:
        await self.get(response_id)
        with self._lock:
            self._drop(response_id)

    def _drop(self, response_id: str) -> None:
        record = self._records.pop(response_id, None)
        if record is not None:
            self._bytes -= record.size
