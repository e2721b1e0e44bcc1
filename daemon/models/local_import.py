"""Adding a model file already on this machine, as a stream of progress steps.

The import runs in a worker thread (hashing a few GB takes a while); its progress crosses to
the event loop through a queue. If the client goes away the import stops at its next chunk,
and its temp file is removed: the store is left as it was.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

from localllm.daemon.api.local_models import ImportMode, ImportProgress
from localllm.model_registry.local_models import AddReport, FoundModel, add_found_model
from localllm.model_registry.store import Store

__all__ = ["import_steps"]

_STEP = 1 / 100  # report progress each percent


class _Stopped(Exception):
    """The client went away: stop the import where it is."""


async def import_steps(
    store: Store, model: FoundModel, name: str | None, mode: ImportMode
) -> AsyncIterator[ImportProgress]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[ImportProgress | BaseException | AddReport] = asyncio.Queue()
    stop = threading.Event()

    def put(item: ImportProgress | BaseException | AddReport) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    reported: dict[str, int] = {}
    verb = "copying" if mode == "copy" or not model.linkable else "linking"

    def progress(file: str, done: int, total: int) -> None:
        if stop.is_set():
            raise _Stopped
        if done >= total or done - reported.get(file, 0) >= total * _STEP:
            reported[file] = done
            put(ImportProgress(status=f"{verb} {file}", file=file, total=total, completed=done))

    def work() -> None:
        try:
            put(add_found_model(store, model, name, mode, on_progress=progress))
        except BaseException as error:  # handed to the loop, raised there
            put(error)

    yield ImportProgress(status=f"{verb} {len(model.files)} file(s)", total=model.size)
    thread = threading.Thread(target=work, name="local-import", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, AddReport):
                for step in _finished(item):
                    yield step
                return
            yield item
    finally:
        stop.set()


def _finished(report: AddReport) -> list[ImportProgress]:
    steps = [
        ImportProgress(status="added", file=f.name, total=f.size, placement=f.placement.value)
        for f in report.files
    ]
    steps.append(
        ImportProgress(status="success", model=report.name, copied_bytes=report.copied_bytes)
    )
    return steps
