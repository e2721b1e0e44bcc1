"""What the daemon and a transcription runner say to each other: one frozen dataclass per frame.

The frames travel as the llama runner's do (``daemon.runners.protocol``: a 4-byte length, then
UTF-8 JSON), tagged ``"op"`` (daemon to runner) or ``"ev"`` (runner to daemon); every other
key is a field, by name. Decoding is strict: an unknown tag, a missing or unknown field, or a
value of the wrong type raises :class:`ProtocolError`, so a field one side adds and the other
does not know fails loudly instead of vanishing (the codec: ``daemon.runners.typed_frames``;
``cancel``, ``shutdown`` and ``fatal`` are the ones every such runner shares, from
``daemon.runners.child_frames``).

Requests::

    spec        first frame: what to load          -> ready, or fatal (and the runner exits)
    transcribe  one audio file; served in order    -> info, segment..., then done (or error)
    cancel      drop a queued request, or stop a running one before its next segment
    shutdown    exit (closing stdin does the same)

Events after ready name their request's ``id``. ``TranscriptionInfo``, ``Segment`` and
``TranscriptionDone`` are also what ``TranscriberProcess.transcribe`` yields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ..runners.child_frames import CancelOp, ChildWire, FatalEv, ShutdownOp
from ..runners.typed_frames import FrameCodec, ProtocolError

__all__ = [
    "CODEC",
    "WIRE",
    "CancelOp",
    "Device",
    "ErrorEv",
    "ErrorKind",
    "Event",
    "FatalEv",
    "ProtocolError",
    "ReadyEv",
    "Request",
    "Segment",
    "ShutdownOp",
    "SpecOp",
    "Task",
    "TranscribeOp",
    "TranscribeRequest",
    "TranscriberInfo",
    "TranscriberSpec",
    "TranscriptionDone",
    "TranscriptionEvent",
    "TranscriptionInfo",
    "Word",
    "decode_event",
    "decode_request",
    "encode",
]

Device = Literal["cpu", "cuda", "auto"]
Task = Literal["transcribe", "translate"]  # translate: into English, from any language
# Why a request failed: a file that is no audio, a request the model cannot serve as asked
# (a language it does not know), or anything else (the runner's log says more).
ErrorKind = Literal["invalid_audio", "invalid_request", "internal"]


# -- payloads -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TranscriberSpec:
    """What to load: a Whisper model in CTranslate2 form (a folder holding ``model.bin``,
    ``config.json``, ``tokenizer.json`` and ``vocabulary.*``), where and how."""

    model_path: str
    device: Device = "auto"  # "auto": CUDA where CTranslate2 finds a GPU, else the CPU
    # CTranslate2's compute type: "auto" (the fastest this device supports), "int8" (CPU),
    # "float16" (GPU), "int8_float16", "default" (as the model was saved)...
    compute_type: str = "auto"
    threads: int = 0  # CPU threads; 0: CTranslate2's default (4, or OMP_NUM_THREADS)
    model_name: str = ""  # for messages; "": the folder's name
    # a recording is decoded and read this much at a time (cut where it is quietest): what
    # bounds the runner's memory however long the file (10 min: about 60 MB)
    piece_seconds: float = 600.0
    batch_size: int = 8  # of the batched pipeline, on a long piece; 1: never batched


@dataclass(frozen=True, slots=True)
class TranscriberInfo:
    """What the runner reports once its model is loaded."""

    multilingual: bool  # False: an English-only model (``*.en``), which cannot translate
    languages: tuple[str, ...]  # the codes ``TranscribeRequest.language`` may name
    device: str  # as CTranslate2 chose it: "cpu" or "cuda"
    compute_type: str  # as CTranslate2 chose it ("int8_float32"...)
    load_seconds: float
    memory_bytes: int  # resident memory of the runner after the load
    pid: int


@dataclass(frozen=True, slots=True)
class TranscribeRequest:
    """One audio file to transcribe (or translate), in any format FFmpeg (PyAV) reads."""

    audio_path: str  # a file the runner can read (the daemon writes an upload to a temp file)
    task: Task = "transcribe"
    language: str | None = None  # ISO 639-1 code; None: detected from the first 30 s
    initial_prompt: str | None = None  # earlier text or spellings, to condition the first window
    # the first temperature; a window that fails Whisper's checks is decoded again hotter, in
    # steps of 0.2 up to 1.0, as OpenAI's whisper does (0: greedy or beam search first)
    temperature: float = 0.0
    word_timestamps: bool = False
    vad_filter: bool = False  # skip silence (Silero VAD) before decoding
    beam_size: int = 5
    # the answer shows each segment's times (subtitles, verbose JSON): False lets a long
    # recording be read by the batched pipeline, whose segments are whole 30 s chunks
    timed_segments: bool = True


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a segment with its time in the audio (seconds) and the model's confidence."""

    start: float
    end: float
    word: str  # as the model wrote it, with its leading space
    probability: float


# -- requests -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpecOp:
    TAG: ClassVar[str] = "spec"
    spec: TranscriberSpec


@dataclass(frozen=True, slots=True)
class TranscribeOp:
    TAG: ClassVar[str] = "transcribe"
    id: int
    request: TranscribeRequest


Request = SpecOp | TranscribeOp | CancelOp | ShutdownOp


# -- events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadyEv:
    TAG: ClassVar[str] = "ready"
    info: TranscriberInfo


@dataclass(frozen=True, slots=True)
class TranscriptionInfo:
    """The audio's language and length, known before its first segment."""

    TAG: ClassVar[str] = "info"
    id: int
    language: str  # as asked, or detected
    language_probability: float  # 1.0 where the request named the language
    duration: float  # seconds of audio
    duration_after_vad: float  # of them, those left to decode (``duration`` without the VAD)


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of the transcript, sent as soon as the model has written it."""

    TAG: ClassVar[str] = "segment"
    id: int  # the request's
    index: int  # the segment's place in the transcript, from 0
    start: float  # seconds into the audio
    end: float
    text: str  # with the model's leading space
    words: tuple[Word, ...]  # empty unless the request asked for word timestamps
    avg_logprob: float
    no_speech_prob: float
    compression_ratio: float
    temperature: float  # the one its window was decoded at
    seek: int  # where its 30-second window starts, in 10 ms frames (OpenAI's ``seek``)
    tokens: tuple[int, ...]  # the text's token ids


@dataclass(frozen=True, slots=True)
class TranscriptionDone:
    TAG: ClassVar[str] = "done"
    id: int
    duration: float  # seconds of audio
    seconds: float  # time the runner took, from reading the file to the last segment
    segments: int


@dataclass(frozen=True, slots=True)
class ErrorEv:
    """A request failed; the runner goes on serving the next."""

    TAG: ClassVar[str] = "error"
    id: int
    kind: ErrorKind
    message: str


TranscriptionEvent = TranscriptionInfo | Segment | TranscriptionDone  # what callers see
Event = ReadyEv | FatalEv | TranscriptionInfo | Segment | TranscriptionDone | ErrorEv


# -- the codec ------------------------------------------------------------------------------

CODEC: FrameCodec[Request, Event] = FrameCodec(Request, Event)
WIRE: ChildWire[TranscriberSpec, TranscriberInfo, Request, Event] = ChildWire(
    CODEC, spec=SpecOp, ready=ReadyEv, failed=ErrorEv, error=ErrorEv
)

encode = CODEC.encode  # the JSON object for a frame: its tag, then every field
decode_request = CODEC.decode_request
decode_event = CODEC.decode_event
