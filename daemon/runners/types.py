"""The contract between the scheduler and a runner: what a runner is asked, and what it says.

Plain frozen dataclasses, no llama_cpp: the scheduler and inference code import these, and the
runner process speaks them over its pipes (see ``frames``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from localllm.model_registry.parameters import FlashAttention, KvCacheType

__all__ = [
    "DEFAULT_DRAFT",
    "REBUILD_COMMAND",
    "BackendSampling",
    "BufferKind",
    "BufferPart",
    "ContextOverflowError",
    "DoneEvent",
    "DoneReason",
    "EmbedCall",
    "FlashAttention",
    "GenerateCall",
    "IncompatibleBuildError",
    "InvalidRequestError",
    "KvCacheType",
    "LlamaBuffer",
    "LoraAdapter",
    "RerankCall",
    "RunnerCrashed",
    "RunnerError",
    "RunnerInfo",
    "RunnerSpec",
    "RunnerState",
    "SamplingParams",
    "SamplingSite",
    "TokenEvent",
]


DEFAULT_DRAFT = 8  # most tokens speculative decoding guesses per step (0: off)
# What rebuilds llama-cpp-python for this computer (and proves the result runs here), from a
# localllm checkout: the fix every "this build cannot run here" message names.
REBUILD_COMMAND = "python installers/llama_build.py --install"

# Sampling in llama.cpp's graph where a request allows it: "auto" (where the whole model runs on
# a GPU), "on" or "off" (``RunnerSpec.backend_sampling``).
BackendSampling = Literal["auto", "on", "off"]
# Why a generation ended: EOS or a stop string, no room or tokens left, or its caller left.
DoneReason = Literal["stop", "length", "cancelled"]
# Where a generation's tokens were sampled: in the decode, on the host; "" when none was.
SamplingSite = Literal["", "backend", "host"]
# Which load of a runner a buffer llama.cpp allocated is for (``LlamaBuffer.part``).
BufferPart = Literal["model", "context", "draft", "projector"]
# What such a buffer holds (``LlamaBuffer.kind``).
BufferKind = Literal["weights", "kv", "window kv", "recurrent", "output", "compute", "lora"]
# A runner process's life: loading, ready, stopping, stopped, crashed (``RunnerProcess.state``).
RunnerState = Literal["loading", "ready", "stopping", "stopped", "crashed"]


@dataclass(frozen=True, slots=True)
class LoraAdapter:
    """A LoRA adapter file applied on top of the model's weights, and how strongly."""

    path: str
    scale: float = 1.0  # llama.cpp multiplies it with the adapter's alpha / rank


@dataclass(frozen=True, slots=True)
class RunnerSpec:
    """Everything that decides how a model is loaded; a change in it means a reload."""

    model_name: str  # display name, used in error messages
    model_paths: tuple[str, ...]  # GGUF shards in order (one path for unsharded models)
    projector_path: str | None = None
    adapters: tuple[LoraAdapter, ...] = ()  # applied in order to every context
    num_ctx: int = 4096  # context per sequence (0 only before the scheduler sizes it)
    num_parallel: int = 4  # sequences that share one context (continuous batching)
    num_gpu_layers: int = 0  # -1 = all
    # a MoE model's layers whose experts stay in RAM (llama-server's --n-cpu-moe): the first
    # ones; -1: all; 0: none
    num_cpu_moe: int = 0
    num_threads: int | None = None
    num_batch: int = 512  # prompt prefill chunk size
    embedding_only: bool = False  # an embedding model (no generation)
    kv_cache_type: KvCacheType = "f16"  # K and V cache
    flash_attention: FlashAttention = "auto"  # a quantized V cache needs it on
    backend_sampling: BackendSampling = "auto"
    host_cache_bytes: int = 0  # host-RAM prompt cache for sequences evicted from slots; 0: off
    num_draft: int = DEFAULT_DRAFT  # most tokens guessed per step (speculative decoding); 0: off
    draft_name: str | None = None  # the draft model that guesses them, for messages
    draft_paths: tuple[str, ...] = ()  # its GGUF shards; none: prompt lookup guesses
    # one slot, flash attention off, and a prompt resumed from a cached prefix only after
    # whole batches read from its start (option ``deterministic``): llama.cpp rounds a batch of
    # other tokens apart, so the rest is read in the very batches a cold read has
    deterministic: bool = False
    # the folder of the prompt cache on disk (``prompt_store``), shared by every runner, and
    # the most it may hold; None or 0: off
    prompt_cache_dir: str | None = None
    prompt_cache_bytes: int = 0


@dataclass(frozen=True, slots=True)
class LlamaBuffer:
    """One buffer llama.cpp allocated at load: for which ``part`` of the runner, on which of
    its buffer types (``CPU``, ``CPU_Mapped``, ``CPU_REPACK``, ``CUDA0``, ``CUDA_Host``...),
    of which kind, and how many bytes."""

    part: BufferPart
    device: str
    kind: BufferKind
    bytes: int


@dataclass(frozen=True, slots=True)
class RunnerInfo:
    """What a runner reports once it is ready."""

    backend: str  # "cpu", "cuda", "metal", ...
    gpu_layers: int  # layers actually offloaded
    total_layers: int
    n_ctx: int  # context per sequence
    n_ctx_train: int
    n_parallel: int
    n_vocab: int
    n_embd: int
    memory_bytes: int  # resident memory of the runner process after load
    vram_bytes: int  # estimate of memory on the GPU (0 on CPU)
    pid: int
    load_seconds: float
    system_info: str = ""
    # what llama.cpp was given ("auto" may be decided: attention.py); "": not reported
    flash_attention: FlashAttention | Literal[""] = ""
    # what llama.cpp allocated at load, as it said so (``worker.buffers``)
    buffers: tuple[LlamaBuffer, ...] = ()
    expert_layers: int = 0  # layers with experts (a MoE model); 0: a dense model
    cpu_expert_layers: int = 0  # of them, those whose experts stay in RAM (``num_cpu_moe``)


@dataclass(frozen=True, slots=True)
class SamplingParams:
    max_tokens: int | None = None  # None: until EOS or the context is full
    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.1
    repeat_last_n: int = 64
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None  # None: random
    logit_bias: dict[int, float] = field(default_factory=dict)  # token id -> bias
    grammar: str | None = None  # GBNF, root rule "root"
    json_schema: str | None = None  # JSON schema text; the runner turns it into a grammar
    stop: tuple[str, ...] = ()
    logprobs: int | None = None  # None: off; n: also return the top n alternatives
    ignore_eos: bool = False


@dataclass(frozen=True, slots=True)
class GenerateCall:
    prompt: str  # already templated; special tokens in it are parsed
    params: SamplingParams = field(default_factory=SamplingParams)
    add_bos: bool = True
    # Images for models with a projector, in the order of ``image_marker`` in the prompt:
    # each occurrence of the marker is where one image's embeddings go.
    images: tuple[bytes, ...] = ()  # encoded images (PNG, JPEG...), decoded by the runner
    image_marker: str = ""  # chosen per request, so no text a user sends can act as one
    # Special tokens, by their text, that stay in the output text (the runner otherwise
    # renders none of the control tokens): a thinking format's markers, such as harmony's
    # ``<|channel|>``. A text that is not one token of the model is ignored.
    visible_tokens: tuple[str, ...] = ()
    # How many characters at the prompt's start its system messages and tools rendered: where
    # other conversations with the same ones part from it (a checkpoint goes there: ``window``).
    system_chars: int = 0
    # Fill in the middle: the text after the gap. With it, ``prompt`` is the plain text before
    # the gap, and the runner writes the model's FIM prompt around both (``infill``).
    suffix: str | None = None


@dataclass(frozen=True, slots=True)
class EmbedCall:
    inputs: tuple[str, ...]
    normalize: bool = True
    truncate: bool = False  # Ollama's truncate; OpenAI never truncates (error instead)


@dataclass(frozen=True, slots=True)
class RerankCall:
    """Score each document's relevance to the query (a reranker model's rank pooling)."""

    query: str
    documents: tuple[str, ...]
    truncate: bool = True  # cut a document that does not fit with the query (else an error)


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """New text for one generation; ``text`` may be empty while a stop string is pending."""

    text: str
    token_ids: tuple[int, ...]
    # per token: {token, logprob, bytes, top_logprobs: [...]}
    logprobs: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class DoneEvent:
    reason: DoneReason
    prompt_tokens: int
    prompt_evaluated: int  # prompt tokens actually decoded (the rest came from the prefix cache)
    completion_tokens: int
    prompt_seconds: float
    generation_seconds: float
    first_token_seconds: float  # from the request reaching the runner to its first token
    stop_sequence: str | None = None  # the stop string that ended it (reason "stop")
    draft_tokens: int = 0  # tokens guessed by speculative decoding
    draft_accepted: int = 0  # of those, the ones the model agreed with
    sampling: SamplingSite = ""  # where its tokens were sampled
    # of the cached prompt tokens, those read back from the prompt cache on disk, the bytes
    # read for them and the time reading, checking and restoring took
    prompt_disk_tokens: int = 0
    prompt_disk_bytes: int = 0
    prompt_disk_seconds: float = 0.0


class RunnerError(Exception):
    """A request failed inside a runner. ``exit_signal`` names the signal that killed the
    runner process (``"SIGSEGV"``...) when that is how it ended."""

    def __init__(self, message: str = "", *, exit_signal: str | None = None):
        super().__init__(message)
        self.exit_signal = exit_signal


class RunnerCrashed(RunnerError):
    """The runner process died; the message names the model and ends with its last log lines."""


class IncompatibleBuildError(RunnerCrashed):
    """The installed llama.cpp build executes instructions this CPU cannot run: its runner died
    by SIGILL (or crashed while loading and the build's self-test crashed too). No request and
    no model can fix that; rebuilding llama-cpp-python for this computer does."""

    def __init__(self, what: str, *, exit_signal: str | None = "SIGILL"):
        super().__init__(
            f"this llama.cpp build uses CPU instructions this computer cannot run ({what}); "
            f"rebuild it for this computer with `{REBUILD_COMMAND}` in the localllm checkout, "
            "or install the app built for this machine; `localllm doctor` checks the build",
            exit_signal=exit_signal,
        )


class InvalidRequestError(RunnerError):
    """The request cannot be served as asked (a bad grammar or schema, a token outside the
    vocabulary, an empty prompt): the client's fault, answered with 400, never a crash."""


class ContextOverflowError(InvalidRequestError):
    """``at_least``: too long to count exactly, the prompt holds ``prompt_tokens`` or more."""

    def __init__(self, prompt_tokens: int, context: int, at_least: bool = False):
        self.prompt_tokens = prompt_tokens
        self.context = context
        self.at_least = at_least
        size = f"at least {prompt_tokens}" if at_least else str(prompt_tokens)
        super().__init__(
            f"the prompt is {size} tokens but the model's context is {context} tokens; "
            "shorten the prompt or raise num_ctx"
        )
