"""A model on the hub sized before it is downloaded: its GGUF headers, read by range requests.

A memory plan needs only a model's header (``model_shape``: its tensors' types and shapes, its
hyperparameters), and on the hub that is the first few megabytes of a file (a 262k-token
vocabulary is most of it). So Discover can say what a quant will take without downloading it:
the pull's own resolution says which files a name means (the quant's shards, its projector) at
which revision, each header is read with HTTP range requests through the puller's connections
and token (``Puller.source``: the CDN redirect, the token kept to the hub's origin), and parsed
by the hostile-file-safe ``gguf_header`` as if it were a local file of the hub's size. A
sharded quant has a header in each shard (its share of the tensors): each is read. What a
repository can make it read is bounded: ``HEADER_BUDGET`` bytes of any file, ``MODEL_BUDGET``
of all of a model's files together, ``MOST_FILES`` files. Shapes are cached per repository,
revision and files: a revision never changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from localllm.model_registry.errors import DownloadError, GGUFError
from localllm.model_registry.gguf_header import GGUFHeader, parse_header
from localllm.model_registry.model_shape import ModelShape, model_shape
from localllm.model_registry.names import ModelName
from localllm.model_registry.pull.fetch import BlobSource, RangeNotSupported, RetryableError
from localllm.model_registry.pull.puller import Puller
from localllm.model_registry.pull.resolve import PlannedFile, PullPlan
from localllm.model_registry.store.manifests import LayerType

__all__ = ["HEADER_BUDGET", "MODEL_BUDGET", "MOST_FILES", "HubModel", "HubShapes", "RangeFile"]

HEADER_BUDGET = 32 << 20  # the most bytes read of one file on the hub
MODEL_BUDGET = 64 << 20  # ... and of all the files of one model (its shards, its projector)
MOST_FILES = 128  # a quant's shards and projector (a 671B model has about 30)
FIRST_READ = 1 << 20  # the first range asked for; each next one doubles what is there
_TRIES = 3  # range requests tried before a header read fails
_MOST_MODELS = 64  # shapes cached


class RangeFile:
    """The start of a file on the hub as a seekable binary stream, which ``parse_header``
    reads as it would a local file: bytes come in order, in range requests that double what is
    there (so a 5 MB header takes 3), never past ``budget``."""

    def __init__(
        self, source: BlobSource, size: int, budget: int = HEADER_BUDGET, first: int = FIRST_READ
    ):
        self._source = source
        self._size = size
        self._budget = budget
        self._first = first
        self._data = bytearray()
        self._pos = 0
        self.requests = 0  # range requests sent

    @property
    def fetched(self) -> int:
        """Bytes of the file read from the hub so far."""
        return len(self._data)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = self._size if n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        self._fill(end)
        chunk = bytes(self._data[self._pos : end])
        self._pos = end
        return chunk

    def _fill(self, end: int) -> None:
        if end <= len(self._data):
            return
        if end > self._budget:
            raise GGUFError(
                "the model's GGUF headers take more than a plan reads of a model on the hub "
                f"({self._budget / (1 << 20):g} MiB)"
            )
        want = min(self._size, self._budget, max(end, 2 * len(self._data), self._first))
        self._data += self._fetch(len(self._data), want)

    def _fetch(self, start: int, end: int) -> bytes:
        problem = ""
        for _ in range(_TRIES):
            self.requests += 1
            try:
                body = self._body(start, end)
            except RetryableError as error:
                problem = str(error)
                continue
            except RangeNotSupported:
                raise DownloadError(
                    "the hub sent a whole model file where its header was asked for"
                ) from None
            if len(body) == end - start:
                return body
            problem = "the answer was cut short"
        raise DownloadError(f"reading a model's header from the hub failed: {problem}")

    def _body(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``, never more, however much the server sends."""
        body = bytearray()
        with self._source.open(start, end) as response:
            for chunk in response.iter_bytes():
                body += chunk[: end - start - len(body)]
                if len(body) >= end - start:
                    break
        return bytes(body)


@dataclass(frozen=True, slots=True)
class HubModel:
    """What a pull of a name would fetch, and the shapes of its model and projector."""

    plan: PullPlan
    model: ModelShape
    projector: ModelShape | None = None

    @property
    def name_to_pull(self) -> str:
        return f"hf.co/{self.plan.repo}:{self.plan.quant}"

    @property
    def size(self) -> int:
        """The bytes a pull downloads (every shard, and the projector)."""
        return self.plan.total_size


class HubShapes:
    """Shapes of models on the hub, through one puller (its endpoint, token and connections)."""

    def __init__(
        self,
        puller: Puller,
        budget: int = HEADER_BUDGET,
        model_budget: int = MODEL_BUDGET,
        most: int = _MOST_MODELS,
    ):
        self._puller = puller
        self._budget = budget
        self._model_budget = model_budget
        self._most = most
        self._cache: OrderedDict[tuple[str, str, tuple[str, ...]], HubModel] = OrderedDict()
        self._lock = threading.Lock()
        self.headers_read = 0  # files whose header was read (what the cache saves)
        self.bytes_read = 0  # of those files, the bytes read from the hub

    def model(self, name: ModelName | str) -> HubModel:
        """The model a pull of ``name`` would fetch, sized from its headers. Blocks (one
        metadata call, then range requests): callers run it in a worker thread. Raises what
        a pull's resolution raises, and ``GGUFError`` for a header that cannot be read."""
        plan = self._puller.resolve(name)
        key = (plan.repo, plan.revision, tuple(file.path for file in plan.files))
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        if len(plan.files) > MOST_FILES:
            raise GGUFError(
                f"hf.co/{plan.repo}:{plan.quant} has {len(plan.files)} files, more than a plan "
                f"reads ({MOST_FILES})"
            )
        if not plan.model_files:
            kind = "a voice" if plan.format == "voice" else "a transcription model"
            raise GGUFError(
                f"hf.co/{plan.repo} holds no GGUF model (it is {kind}); plans are for GGUF models"
            )
        left = [self._model_budget]
        headers = [self._header(plan, file, left) for file in plan.model_files]
        projectors = [f for f in plan.files if f.layer_type is LayerType.PROJECTOR]
        projector = model_shape(self._header(plan, projectors[0], left)) if projectors else None
        found = HubModel(plan, model_shape(headers[0], headers[1:]), projector)
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > self._most:
                self._cache.popitem(last=False)
        return found

    def _header(self, plan: PullPlan, file: PlannedFile, left: list[int]) -> GGUFHeader:
        """``file``'s header, read within what is ``left`` of the model's budget."""
        if left[0] <= 0:
            raise GGUFError(
                "the model's GGUF headers take more than a plan reads of a model on the hub "
                f"({self._model_budget / (1 << 20):g} MiB for all its files)"
            )
        budget = min(self._budget, left[0])
        stream = RangeFile(self._puller.source(plan, file), file.size, budget)
        try:
            return parse_header(stream, file.size)
        finally:
            left[0] -= stream.fetched
            with self._lock:
                self.headers_read += 1
                self.bytes_read += stream.fetched
