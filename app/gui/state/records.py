"""What the desktop app knows about the daemon, as frozen values.

The gateway turns the client's JSON into these (through ``wire.py``), so views, state and tests
never depend on the wire shape: when a field moves on the wire, only ``wire.py`` changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = [
    "CatalogModel",
    "ChatDelta",
    "ChatDone",
    "GpuInfo",
    "HubFile",
    "HubRepo",
    "InstalledModel",
    "ModelDetails",
    "ModelPlan",
    "PlanDevice",
    "PlanPart",
    "PullProgress",
    "PullStatus",
    "RunningModel",
    "ServerInfo",
    "SystemInfo",
]


@dataclass(frozen=True, slots=True)
class InstalledModel:
    name: str
    size: int
    modified_at: datetime | None
    digest: str = ""
    family: str = ""
    parameter_size: str = ""
    quantization: str = ""
    format: str = ""
    context_length: int | None = None  # not in the list; filled in from details later
    remote: str = ""  # the remote engine serving it; "" when it is in this store
    capabilities: frozenset[str] | None = None  # from its details too (None: not known yet)


@dataclass(frozen=True, slots=True)
class ModelDetails:
    name: str
    modelfile: str = ""
    parameters: str = ""
    template: str = ""
    system: str = ""
    license: str = ""
    metadata: tuple[tuple[str, str], ...] = ()
    capabilities: frozenset[str] = frozenset()
    context_length: int | None = None
    runs_at: int | None = None  # the context a chat that sets none runs at (the daemon says)
    slots: int = 0  # the requests it serves at once, each with that context (0: not said)

    @property
    def has_vision(self) -> bool:
        return "vision" in self.capabilities

    @property
    def has_thinking(self) -> bool:
        """It reasons before it answers, and its template lets a chat turn that on or off."""
        return "thinking" in self.capabilities

    @property
    def has_chat_template(self) -> bool:
        """False for a base model: the daemon chats with it through a fallback template."""
        return "chat" in self.capabilities or bool(self.template)

    @property
    def block_count(self) -> int | None:
        """Its repeating layers (what GPU offload counts), from the GGUF metadata."""
        value = next((v for k, v in self.metadata if k.endswith(".block_count")), "")
        return int(value) if value.isdigit() else None


@dataclass(frozen=True, slots=True)
class RunningModel:
    name: str
    size: int
    size_vram: int
    expires_at: datetime | None
    context_length: int | None
    processor: str
    remote: str = ""  # the remote engine serving it; "" for a model loaded here


@dataclass(frozen=True, slots=True)
class PullProgress:
    """One line of a pull or import stream."""

    name: str
    status: str
    digest: str = ""
    total: int = 0
    completed: int = 0


@dataclass(frozen=True, slots=True)
class PullStatus:
    """A pull the daemon is running, has paused, or has given up on."""

    name: str
    status: str
    total: int
    completed: int
    state: str  # "queued" | "running" | "paused" | "failed"
    error: str = ""  # why it failed, in the daemon's words


@dataclass(frozen=True, slots=True)
class CatalogModel:
    """A curated short name: what it is and how big, known without the internet."""

    name: str
    parameter_size: str
    size: int
    description: str
    kind: str = "chat"
    repo: str = ""
    capabilities: frozenset[str] = frozenset()  # beyond plain chat: "vision", "tools", ...
    quant: str = ""  # the quant of ``repo`` it pulls (what a plan of it reads)


@dataclass(frozen=True, slots=True)
class HubRepo:
    repo: str
    downloads: int = 0
    likes: int = 0
    updated: datetime | None = None


@dataclass(frozen=True, slots=True)
class HubFile:
    file: str
    quant: str
    size: int
    name_to_pull: str
    recommended: bool = False  # the daemon's pick: the best quant that fits free memory


@dataclass(frozen=True, slots=True)
class PlanPart:
    """One part of a model's memory plan: ``bytes`` of ``kind`` (weights, kv, compute...) on
    ``device`` ("CPU": RAM, "GPU0"...); ``measured``: llama.cpp's own figure; ``later``: RAM
    the runner may fill after the load (its prompt cache), not at it."""

    kind: str
    device: str
    bytes: int
    text: str = ""
    measured: bool = False
    later: bool = False


@dataclass(frozen=True, slots=True)
class PlanDevice:
    device: str
    bytes: int  # at load
    later_bytes: int = 0
    free: int | None = None  # what it is judged against (None: not judged)


@dataclass(frozen=True, slots=True)
class ModelPlan:
    """What loading a model would take, part by part, and how it would run (``/api/plan``)."""

    model: str
    parts: tuple[PlanPart, ...]
    devices: tuple[PlanDevice, ...]
    total: int
    fits: bool
    fit_reason: str = ""  # the daemon's figures, in its words
    suggestion: str = ""  # where it does not fit, what would (the daemon's words)
    context_length: int = 0
    context_reason: str = ""
    num_parallel: int = 1
    parallel_reason: str = ""
    kv_cache_type: str = "f16"
    flash_attention: bool = True
    gpu_layers: int = 0
    total_layers: int = 0
    placement_reason: str = ""  # why that many layers on the GPU (the daemon's words)
    cpu_moe_layers: int = 0  # a mixture of experts': the first layers whose experts stay in RAM
    measured: bool = False
    notes: tuple[str, ...] = ()

    @property
    def on_gpu(self) -> bool:
        """Every layer on a GPU."""
        return self.total_layers > 0 and self.gpu_layers >= self.total_layers


@dataclass(frozen=True, slots=True)
class GpuInfo:
    name: str
    vram_total: int
    vram_free: int


@dataclass(frozen=True, slots=True)
class SystemInfo:
    ram_total: int
    ram_available: int
    gpus: tuple[GpuInfo, ...] = ()
    backend: str = ""
    # a GPU the installed llama.cpp build cannot use, and the fix, as a sentence ("": none)
    build_advice: str = ""

    @property
    def vram_total(self) -> int:
        return sum(gpu.vram_total for gpu in self.gpus)

    @property
    def advice_command(self) -> str:
        """The command ``build_advice`` quotes (between backticks), "" when it quotes none."""
        _before, tick, rest = self.build_advice.partition("`")
        command, closed, _after = rest.partition("`")
        return command.strip() if tick and closed else ""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    host: str
    port: int
    lan: bool
    api_key_set: bool
    lan_url: str = ""  # how other devices reach it (this machine's network address), if lan

    @property
    def base_url(self) -> str:
        """Where this machine reaches it (a wildcard bind address means loopback)."""
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ChatDelta:
    """A piece of the reply as it streams in: of the answer, or of a thinking model's
    reasoning (which never becomes part of the answer)."""

    content: str
    thinking: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()  # calls the model made: (name, args)


@dataclass(frozen=True, slots=True)
class ChatDone:
    """The final chunk of a reply: why it stopped and the daemon's timings (nanoseconds)."""

    done_reason: str = "stop"
    total_duration: int = 0
    load_duration: int = 0
    prompt_eval_count: int = 0
    prompt_eval_duration: int = 0
    eval_count: int = 0
    eval_duration: int = 0
    # the daemon dropped the chat's oldest turns to fit: how many, and the index (in the
    # messages sent) of the first one kept after the system prompt
    dropped_messages: int = 0
    kept_from: int | None = None
