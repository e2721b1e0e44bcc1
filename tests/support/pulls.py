"""Test helpers shared by tests and bench scripts (a local Hugging Face hub, pull drivers)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.support.polling import wait_for

__all__ = ["PullThread", "fast_pull_options", "sidecar_completed"]


def fast_pull_options(**overrides: Any):
    """Download options sized for tests: 64 KiB parts, 1 s stall timeout, quick retries."""
    from localllm.model_registry.pull import DownloadOptions

    defaults = dict(
        connections=4,
        part_size=64 << 10,
        stall_timeout=1.0,
        connect_timeout=2.0,
        retry_backoff=0.02,
        max_backoff=0.1,
        max_attempts=4,
        save_interval=0.05,
    )
    return DownloadOptions(**(defaults | overrides))


def sidecar_completed(state_path: Path) -> int:
    """Bytes a partial download's sidecar records (0 if there is none yet)."""
    from localllm.model_registry.pull.partial import PartialState

    state = PartialState.load(state_path)
    return state.completed if state else 0


class PullThread(threading.Thread):
    """Runs ``puller.pull(name)`` in the background, keeping its events and error."""

    def __init__(self, puller, name: str):
        super().__init__(daemon=True)
        self.puller, self.model = puller, name
        self.events: list = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for event in self.puller.pull(self.model):
                self.events.append(event)
        except BaseException as error:
            self.error = error

    @property
    def completed(self) -> int:
        done = [e.completed for e in list(self.events) if e.completed is not None]
        return max(done, default=0)

    def wait_for_bytes(self, count: int, timeout: float = 10.0) -> None:
        done = wait_for(lambda: self.completed >= count or not self.is_alive(), timeout)
        assert done, f"the pull did not reach {count} bytes"

    def finish(self, timeout: float = 20.0) -> str:
        """Join; return the last status or raise the pull's error."""
        self.join(timeout)
        assert not self.is_alive(), "the pull did not stop"
        if self.error is not None:
            raise self.error
        return self.events[-1].status


def publish(hub, data: Path | bytes, repo: str, rate: float | None) -> tuple[str, str, str]:
    """A repository on the local hub holding ``data`` as its F16 GGUF, sent at ``rate`` bytes/s
    per connection (None: unthrottled); returns (repo, file, name to pull)."""
    file = f"{repo.split('/')[-1].removesuffix('-GGUF')}-F16.gguf"
    hub.add_repo(repo, {file: data})
    hub.set_throttle(repo, file, rate)
    return repo, file, f"hf.co/{repo}:F16"


class StreamWatcher(threading.Thread):
    """Consumes a pull's progress stream (the client's or ollama's) in the background, keeping
    every event, or the error that ended it."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.events, self.error = stream, [], None
        self.start()

    def run(self) -> None:
        try:
            for event in self.stream:
                self.events.append(event)
        except Exception as error:
            self.error = error

    @property
    def statuses(self) -> list[str]:
        return [event.status for event in list(self.events)]

    @property
    def completed(self) -> int:
        return max((e.completed or 0 for e in list(self.events)), default=0)

    def last(self, timeout: float = 60) -> str:
        """The final status, once the stream ended without an error."""
        self.join(timeout)
        assert not self.is_alive() and self.error is None, self.error
        return self.events[-1].status
