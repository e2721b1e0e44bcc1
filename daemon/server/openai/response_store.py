"""The responses the daemon keeps for ``previous_response_id`` and ``GET /v1/responses/{id}``.

Kept in memory only, bounded (the newest ``max_count``, at most ``max_bytes`` together; the
oldest go first), and gone when the daemon stops. A conversation is private text the user may
not expect on disk, and a local agent chains responses within one session, so nothing is
written anywhere. Each record holds its whole conversation (inputs and reply, not the
instructions), so a chain keeps working when an older link is evicted or deleted; the size
counts each record's conversation in full, images included, even where records share them.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from daemon.api.openai_responses import ResponseObject
from daemon.errors import NotFoundError

__all__ = ["ResponseStore", "StoredResponse"]

MAX_COUNT = 1000
MAX_BYTES = 256 << 20


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
        kept = tuple(copy.deepcopy(list(messages)))
        size = len(response.model_dump_json()) + len(json.dumps(kept, default=str))
        return cls(response, kept, tuple(images), size + sum(map(len, images)))


class ResponseStore:
    """Stored responses by id, newest last (one per app, on ``app.state.responses``)."""

    def __init__(self, max_count: int = MAX_COUNT, max_bytes: int = MAX_BYTES):
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._records: OrderedDict[str, StoredResponse] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._records)

    def put(self, record: StoredResponse) -> None:
        """Keep ``record``, evicting the oldest until within bounds (the newest always stays)."""
        self._drop(record.response.id)
        self._records[record.response.id] = record
        self._bytes += record.size
        while len(self._records) > 1 and (
            len(self._records) > self.max_count or self._bytes > self.max_bytes
        ):
            self._drop(next(iter(self._records)))

    def get(self, response_id: str) -> StoredResponse:
        record = self._records.get(response_id)
        if record is None:
            raise NotFoundError(
                f"response {response_id!r} not found: it was not stored (store: false), was "
                f"deleted, or is older than the newest {self.max_count} this daemon keeps "
                "in memory since it started"
            )
        return record

    def delete(self, response_id: str) -> None:
        self.get(response_id)
        self._drop(response_id)

    def _drop(self, response_id: str) -> None:
        record = self._records.pop(response_id, None)
        if record is not None:
            self._bytes -= record.size
