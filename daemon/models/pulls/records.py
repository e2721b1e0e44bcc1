"""The pull list, kept in ``<data dir>/pulls.json`` so it survives the daemon restarting.

Each record says which model, its state (queued, running, paused, failed) and its byte totals.
The file is replaced atomically, so a crash leaves the old list or the new one, never half of
one. A record still "running" or "queued" when the daemon starts belonged to a daemon that
died: it is listed as paused (interrupted), and resuming it picks up its partial download.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import get_args

from localllm.daemon.api.native_models import PullState
from localllm.model_registry.store.atomic import atomic_write_bytes

__all__ = ["PullRecord", "PullRecords"]

log = logging.getLogger("localllm.pulls")

_VERSION = 1
_STATES: tuple[PullState, ...] = get_args(PullState)


@dataclass
class PullRecord:
    name: str  # the display name the pull was asked for
    state: PullState = "running"
    status: str = "pulling manifest"
    error: str | None = None
    interrupted: bool = False
    updated: float = field(default_factory=time.time)
    blobs: dict[str, list[int]] = field(default_factory=dict)  # digest -> [total, completed]

    @property
    def total(self) -> int:
        return sum(total for total, _ in self.blobs.values())

    @property
    def completed(self) -> int:
        return sum(done for _, done in self.blobs.values())

    @classmethod
    def from_json(cls, data: object) -> PullRecord | None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        blobs = data.get("blobs")
        if not isinstance(blobs, dict):
            blobs = {}
        record = cls(
            name=data["name"],
            state=_state(data.get("state")),
            status=str(data.get("status") or ""),
            error=data.get("error") if isinstance(data.get("error"), str) else None,
            interrupted=bool(data.get("interrupted")),
            updated=float(data.get("updated") or 0.0),
            blobs={str(k): _pair(v) for k, v in blobs.items()},
        )
        if record.state in ("running", "queued"):  # its daemon died: nothing runs it now
            record.state, record.status, record.interrupted = "paused", "paused", True
        return record


def _state(value: object) -> PullState:
    """A recorded state; one this version does not know is listed as paused."""
    for state in _STATES:
        if value == state:
            return state
    return "paused"


def _pair(value: object) -> list[int]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return [max(0, value[0]), max(0, value[1])]
    return [0, 0]


class PullRecords:
    """Records by full model name; ``save`` writes at most every ``interval`` seconds unless
    forced (state changes are always written at once)."""

    def __init__(self, path: Path, interval: float = 1.0):
        self.path = path
        self._interval = interval
        self._saved_at = 0.0
        self._records: dict[str, PullRecord] = self._load()

    def _load(self) -> dict[str, PullRecord]:
        try:
            document = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("ignoring an unreadable pull list (%s)", type(error).__name__)
            return {}
        entries = document.get("pulls") if isinstance(document, dict) else None
        records = {}
        for key, data in (entries or {}).items() if isinstance(entries, dict) else ():
            record = PullRecord.from_json(data)
            if record is not None:
                records[str(key)] = record
        return records

    def get(self, key: str) -> PullRecord | None:
        return self._records.get(key)

    def all(self) -> list[PullRecord]:
        return sorted(self._records.values(), key=lambda record: record.updated)

    def put(self, key: str, record: PullRecord, force: bool = True) -> None:
        """Store ``record``; progress updates pass ``force=False`` to be saved throttled."""
        record.updated = time.time()
        self._records[key] = record
        self.save(force=force)

    def remove(self, key: str) -> None:
        if self._records.pop(key, None) is not None:
            self.save(force=True)

    def save(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._saved_at < self._interval:
            return
        self._saved_at = now
        document = {
            "version": _VERSION,
            "pulls": {key: asdict(record) for key, record in self._records.items()},
        }
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # private: a temp file is made 0600 (mkstemp), then renamed into place
            atomic_write_bytes(self.path, json.dumps(document, indent=1).encode())
        except OSError as error:  # the list is a convenience: never fail a pull over it
            log.warning("could not save the pull list: %s", error.strerror or error)
