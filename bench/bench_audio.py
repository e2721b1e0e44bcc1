"""Speech to text: our ``/v1/audio/transcriptions`` against faster-whisper called directly.

    python bench/bench_audio.py [--threads 2] [--seconds 60] [--rounds 3] [--write]

A clip of about ``--seconds`` of English is spoken by espeak-ng, a sentence at a time, and
joined into one WAV. Whisper base (CTranslate2 form, ``tests/support/real_whisper.py``) then
transcribes it, loaded once in each of two places on ``--threads`` threads:

* direct: ``faster_whisper.WhisperModel`` in this process, called with the same arguments our
  runner passes (``daemon/transcription/worker/model.py``); wall time from the call to the
  last segment;
* ours: the daemon's endpoint over HTTP, its runner warmed by one request first; wall time of
  the request (upload, decode, transcription, answer);
* ours with 4 clients posting the clip at once: total wall time, and the aggregate real-time
  factor (wall / 4 clips' audio). A runner serves one request at a time, so this shows the
  queue costs nothing, not that 4 run faster than 1;
* batched: faster-whisper's ``BatchedInferencePipeline`` on the same in-process model, at
  ``batch_size`` 4 and 8 (same beam size and first temperature; it cuts the clip with its
  default Silero VAD, and has no temperature fallback), and 4 copies of the clip through it
  one call after another: whether its batching pays on this CPU for one long file.

Direct, ours and the two batched sizes take turns, in alternating order, over ``--rounds``
rounds; the table shows medians, the real-time factor (wall / audio seconds) and the word error
rate of each transcript against the script (a sanity column: espeak-ng's voice is
synthetic). ``--write`` replaces "## Speech to text" in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_serving import machine, stop  # noqa: E402
from bench_vs_llama_server import start_ours, write_results  # noqa: E402

SECTION = "Speech to text"
MODEL = "whisper:base"
CLIENTS = 4
BATCH_SIZES = (4, 8)
COPIES_BATCH = 8  # the batch size of the 4-copies row
PAUSE = 0.3  # seconds of silence between sentences
HTTP = httpx.Client(timeout=3600, limits=httpx.Limits(max_keepalive_connections=0))
# Plain words, no numbers or names a transcript may spell another way: the error rate then
# measures hearing, not spelling. About 4 s each in espeak-ng's voice; cycled past the end.
SENTENCES = (
    "The morning train was late again, so most of the passengers waited on the cold platform.",
    "She opened the window and listened to the birds singing in the garden below.",
    "A good cup of coffee can make a long meeting feel a little shorter.",
    "The old bridge over the river was closed for repairs during the whole summer.",
    "Children ran along the beach, looking for shells and small crabs in the sand.",
    "He forgot his umbrella at home, and the rain started just as he left the office.",
    "The library keeps its oldest books in a quiet room at the back of the building.",
    "After dinner we walked slowly through the park while the sun went down.",
    "The farmer checked the weather every evening before deciding what to plant.",
    "Our neighbours painted their front door a bright shade of yellow last week.",
    "The teacher asked the class to read the first chapter before the next lesson.",
    "A strong wind blew across the hills and bent the tall grass toward the valley.",
    "The baker wakes up early to prepare fresh bread for the small village shop.",
    "They packed their bags the night before, so the trip began without any hurry.",
    "The museum was full of visitors who wanted to see the new painting exhibition.",
    "He learned to cook simple meals when he moved into his first apartment.",
    "The cat slept on the warm stones near the kitchen door for most of the afternoon.",
    "Several ships waited outside the harbour until the storm had passed.",
    "She wrote a long letter to her grandmother and posted it on the way to work.",
    "The road climbed slowly through the forest and ended at a quiet lake.",
    "Every spring the town holds a market where farmers sell fruit and flowers.",
    "The engineer explained the plan carefully, and everyone agreed to try it.",
)


@dataclass(frozen=True)
class Clip:
    path: Path
    text: str  # what was spoken
    seconds: float  # the joined WAV's own length


@dataclass(frozen=True)
class Heard:
    seconds: float  # wall time
    text: str


@dataclass
class Results:
    direct: list[Heard]
    ours: list[Heard]
    together: list[tuple[float, list[Heard]]]  # one per round: wall time, each client's
    batched: dict[int, list[Heard]]  # by batch size
    copies: list[tuple[float, list[Heard]]]  # one per round: wall time, each copy's


# -- the clip ---------------------------------------------------------------------------------
def make_clip(work: Path, seconds: float) -> Clip:
    """Sentences spoken one by one and joined, with a short pause between, until the clip
    lasts at least ``seconds``."""
    from tests.support.speech import speak

    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng)")
    params, frames, spoken, length = None, [], [], 0.0
    while length < seconds:
        sentence = SENTENCES[len(spoken) % len(SENTENCES)]
        path = speak(sentence, work / f"sentence-{len(spoken)}.wav")
        with wave.open(str(path), "rb") as part:
            params = params or part.getparams()
            if part.getparams()[:3] != params[:3]:
                raise RuntimeError(f"espeak-ng changed format mid-clip: {part.getparams()}")
            frames.append(part.readframes(part.getnframes()))
        silence = int(params.framerate * PAUSE) * params.sampwidth * params.nchannels
        frames.append(b"\0" * silence)
        spoken.append(sentence)
        length = sum(map(len, frames)) / (params.framerate * params.sampwidth * params.nchannels)
    assert params is not None
    clip = work / "clip.wav"
    with wave.open(str(clip), "wb") as out:
        out.setnchannels(params.nchannels)
        out.setsampwidth(params.sampwidth)
        out.setframerate(params.framerate)
        out.writeframes(b"".join(frames))
    with wave.open(str(clip), "rb") as written:  # its length as a reader sees it
        measured = written.getnframes() / written.getframerate()
    return Clip(clip, " ".join(spoken), measured)


# -- the two ways to transcribe ---------------------------------------------------------------
def worker_arguments() -> dict[str, Any]:
    """faster-whisper's transcribe arguments for a request that sets nothing, as our runner
    passes them (``WhisperRunner.start``; the endpoint's form defaults are the request's)."""
    from localllm.daemon.transcription.frames import TranscribeRequest
    from localllm.daemon.transcription.worker.model import _temperatures

    request = TranscribeRequest("")
    return {
        "language": request.language,
        "task": request.task,
        "beam_size": request.beam_size,
        "temperature": _temperatures(request.temperature),
        "initial_prompt": request.initial_prompt,
        "word_timestamps": request.word_timestamps,
        "vad_filter": request.vad_filter,
    }


def load_direct(folder: Path, threads: int) -> Any:
    """faster-whisper as our runner loads it: its spec's compute type ("auto"), on the CPU."""
    from faster_whisper import WhisperModel

    from localllm.daemon.transcription.frames import TranscriberSpec

    spec = TranscriberSpec(str(folder))
    return WhisperModel(
        str(folder), device="cpu", compute_type=spec.compute_type, cpu_threads=threads
    )


def transcribe_direct(model: Any, clip: Clip, arguments: dict[str, Any]) -> Heard:
    started = time.perf_counter()
    segments, _ = model.transcribe(str(clip.path), **arguments)
    text = "".join(segment.text for segment in segments)  # decoded as they are asked for
    return Heard(time.perf_counter() - started, text)


def batched_arguments(arguments: dict[str, Any], batch_size: int) -> dict[str, Any]:
    """The sequential call's arguments for ``BatchedInferencePipeline.transcribe``: it needs VAD
    (its default) or clip timestamps to cut the audio, so ``vad_filter`` goes."""
    kept = {key: value for key, value in arguments.items() if key != "vad_filter"}
    return {**kept, "batch_size": batch_size}


def transcribe_batched(pipeline: Any, clip: Clip, arguments: dict[str, Any]) -> Heard:
    started = time.perf_counter()
    segments, _ = pipeline.transcribe(str(clip.path), **arguments)
    text = "".join(segment.text for segment in segments)
    return Heard(time.perf_counter() - started, text)


def transcribe_copies(
    pipeline: Any, clip: Clip, arguments: dict[str, Any]
) -> tuple[float, list[Heard]]:
    """``CLIENTS`` copies of the clip, one batched call each, back to back."""
    started = time.perf_counter()
    heard = [transcribe_batched(pipeline, clip, arguments) for _ in range(CLIENTS)]
    return time.perf_counter() - started, heard


def transcribe_ours(url: str, audio: bytes) -> Heard:
    started = time.perf_counter()
    response = HTTP.post(
        url + "/v1/audio/transcriptions",
        files={"file": ("clip.wav", audio, "audio/wav")},
        data={"model": MODEL},
    )
    response.raise_for_status()
    return Heard(time.perf_counter() - started, response.json()["text"])


def transcribe_together(url: str, audio: bytes) -> tuple[float, list[Heard]]:
    """``CLIENTS`` requests released at once; the wall time until the last answer."""
    gate = threading.Barrier(CLIENTS + 1)

    def client() -> Heard:
        gate.wait()
        return transcribe_ours(url, audio)

    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(client) for _ in range(CLIENTS)]
        gate.wait()
        started = time.perf_counter()
        heard = [future.result() for future in futures]
    return time.perf_counter() - started, heard


def measure(model: Any, url: str, clip: Clip, rounds: int) -> Results:
    from faster_whisper import BatchedInferencePipeline

    arguments = worker_arguments()
    batched = {size: batched_arguments(arguments, size) for size in BATCH_SIZES}
    pipeline = BatchedInferencePipeline(model)
    audio = clip.path.read_bytes()
    transcribe_ours(url, audio)  # the runner starts and loads on its first request
    transcribe_direct(model, clip, arguments)  # and this one's first call allocates
    for size in BATCH_SIZES:  # the VAD model loads, each batch shape allocates
        transcribe_batched(pipeline, clip, batched[size])
    results = Results([], [], [], {size: [] for size in BATCH_SIZES}, [])
    sides: dict[str, Callable[[], Heard]] = {
        "direct": lambda: transcribe_direct(model, clip, arguments),
        "ours": lambda: transcribe_ours(url, audio),
        **{
            f"batch {size}": (lambda size=size: transcribe_batched(pipeline, clip, batched[size]))
            for size in BATCH_SIZES
        },
    }
    order = list(sides)
    for n in range(rounds):
        for side in order if n % 2 == 0 else order[::-1]:
            heard = sides[side]()
            if side.startswith("batch "):
                results.batched[int(side.split()[1])].append(heard)
            else:
                getattr(results, side).append(heard)
            print(f"round {n + 1} {side}: {heard.seconds:.2f} s", flush=True)
        results.together.append(transcribe_together(url, audio))
        print(f"round {n + 1} {CLIENTS} clients: {results.together[-1][0]:.2f} s", flush=True)
        results.copies.append(transcribe_copies(pipeline, clip, batched[COPIES_BATCH]))
        print(f"round {n + 1} {CLIENTS} batched copies: {results.copies[-1][0]:.2f} s", flush=True)
    return results


# -- the report -------------------------------------------------------------------------------
def report(results: Results, clip: Clip, args, loads: tuple[str, str], compute: str) -> str:
    from tests.support.speech import word_error_rate

    def wer(heard: list[Heard]) -> str:
        rates = {f"{word_error_rate(clip.text, each.text):.3f}" for each in heard}
        return " / ".join(sorted(rates))

    direct = statistics.median(each.seconds for each in results.direct)
    ours = statistics.median(each.seconds for each in results.ours)
    together = statistics.median(wall for wall, _ in results.together)
    each_client = [heard for _, round_ in results.together for heard in round_]
    copies = statistics.median(wall for wall, _ in results.copies)
    same = {_spaced(each.text) for each in results.direct} == {
        _spaced(each.text) for each in results.ours
    }
    rows = [
        ("faster-whisper, direct", direct, direct / clip.seconds, "", wer(results.direct)),
        (
            "ours, `/v1/audio/transcriptions`",
            ours,
            ours / clip.seconds,
            f"{ours / direct - 1:+.1%}",
            wer(results.ours),
        ),
        (
            f"ours, {CLIENTS} clients at once (total)",
            together,
            together / (CLIENTS * clip.seconds),
            f"{together / (CLIENTS * direct):.2f}x {CLIENTS} direct",
            wer(each_client),
        ),
        *(
            (
                f"faster-whisper, `BatchedInferencePipeline` batch {size}",
                wall,
                wall / clip.seconds,
                f"{wall / direct:.2f}x direct",
                wer(results.batched[size]),
            )
            for size in BATCH_SIZES
            for wall in [statistics.median(each.seconds for each in results.batched[size])]
        ),
        (
            f"faster-whisper, batch {COPIES_BATCH}, {CLIENTS} copies back to back (total)",
            copies,
            copies / (CLIENTS * clip.seconds),
            f"{copies / (CLIENTS * direct):.2f}x {CLIENTS} direct",
            wer([heard for _, round_ in results.copies for heard in round_]),
        ),
    ]
    lines = [
        f"Machine: {machine()}. Load average (1/5/15 min) before: {loads[0]}; after: "
        f"{loads[1]} (the run's own {args.threads} threads count there).  ",
        f"Command: `python bench/bench_audio.py --threads {args.threads} --seconds "
        f"{args.seconds:g} --rounds {args.rounds}`.  ",
        f"Whisper base (CTranslate2, compute type `auto`: {compute} here), {args.threads} "
        f"threads on both, faster-whisper's arguments as our runner passes them (beam 5, "
        f"temperature fallback 0-1.0, no VAD, language detected); a {clip.seconds:.1f} s "
        f"espeak-ng clip (22 kHz mono WAV, {len(clip.text.split())} words). Medians of "
        f"{args.rounds} rounds, direct, ours and batched alternating; our runner and the "
        "batched pipeline warmed by one call each. "
        f"Real-time factor: wall / audio seconds ({CLIENTS} clips for the rows of "
        f"{CLIENTS} clients and copies). Our runner serves one request at a time: {CLIENTS} "
        "clients queue, so that row shows what the queue costs, not a speed-up. "
        "The batched rows are faster-whisper's `BatchedInferencePipeline` on the same "
        "in-process model: its default Silero VAD cuts the clip into chunks of up to 30 s, "
        "batched through the encoder and a beam-5 decode at temperature 0 only (it has no "
        "fallback) and without the previous text as prompt.",
        "",
        "| | wall s (median) | real-time factor | vs direct | word error rate |",
        "| --- | --- | --- | --- | --- |",
        *(f"| {name} | {wall:.2f} | {rtf:.3f} | {vs} | {w} |" for name, wall, rtf, vs, w in rows),
        "",
        f"Every wall time, s: direct {_times(results.direct)}; ours {_times(results.ours)}; "
        f"{CLIENTS} clients {', '.join(f'{wall:.2f}' for wall, _ in results.together)}; "
        + "; ".join(f"batch {size} {_times(results.batched[size])}" for size in BATCH_SIZES)
        + f"; {CLIENTS} copies {', '.join(f'{wall:.2f}' for wall, _ in results.copies)}. "
        f"Direct and ours wrote {'the same' if same else 'different'} text (whitespace aside). "
        f"Target: ours under 5% over direct ({'met' if ours / direct < 1.05 else 'missed'}).",
    ]
    return "\n".join(lines)


def _spaced(text: str) -> str:
    """The text with its whitespace made single (our endpoint trims the segments' leading
    space)."""
    return " ".join(text.split())


def _times(heard: list[Heard]) -> str:
    return ", ".join(f"{each.seconds:.2f}" for each in heard)


def _load() -> str:
    return " ".join(f"{each:.2f}" for each in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the clip")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    from localllm.model_registry.store import Store
    from localllm.model_registry.tiny_gguf import write_tiny_model
    from localllm.model_registry.transcription import import_whisper_folder
    from tests.support.real_whisper import whisper_base_path

    work = Path(tempfile.mkdtemp(prefix="bench-audio-"))
    proc = None
    try:
        folder = whisper_base_path()
        clip = make_clip(work, args.seconds)
        print(f"clip: {clip.seconds:.1f} s, {len(clip.text.split())} words", flush=True)
        # the daemon starts with a generated GGUF as "bench" (never loaded here); Whisper beside
        proc, url = start_ours(work, write_tiny_model(work / "tiny.gguf"), args.threads, 512, 1)
        import_whisper_folder(Store(work / "store"), MODEL, folder)
        model = load_direct(folder, args.threads)
        loads = (_load(), "")
        results = measure(model, url, clip, args.rounds)
        loads = (loads[0], _load())
        text = report(results, clip, args, loads, str(model.model.compute_type))
    finally:
        if proc is not None:
            stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    print(text)
    if args.write:
        write_results(text, SECTION)


if __name__ == "__main__":
    main()
