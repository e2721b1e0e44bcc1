"""Speech to text: our ``/v1/audio/transcriptions`` against faster-whisper called directly.

    python bench/bench_audio.py [--threads 2] [--seconds 60] [--rounds 3] [--write]

A clip of about ``--seconds`` of English is spoken by espeak-ng, a sentence at a time, and
joined into one WAV. Whisper base (CTranslate2 form, ``tests/support/real_whisper.py``) then
transcribes it, loaded once in each of two places on ``--threads`` threads:

* sequential, direct: ``faster_whisper.WhisperModel.transcribe`` in this process, with the
  arguments our runner passes (``daemon/transcription/worker/model.py``); wall time from the
  call to the last segment;
* ours asked for subtitles (``response_format=srt``): the daemon's endpoint over HTTP, which
  reads such a request sequentially (its segments' times show); wall time of the request
  (upload, decode, transcription, answer);
* batched, direct: faster-whisper's ``BatchedInferencePipeline`` at ``batch_size`` 8 on the
  same in-process model (it cuts the clip with its Silero VAD, decodes at the first
  temperature only, without the previous text as prompt);
* ours asked for JSON (its default): the endpoint reads a clip of a minute or more with the
  batched pipeline, as direct's batched row does;
* ours with 4 clients posting the clip (JSON) at once: total wall time, and the aggregate
  real-time factor (wall / 4 clips' audio). A runner serves one request at a time, so this
  shows what the queue costs, not a speed-up.

The four single rows take turns, in alternating order, over ``--rounds``
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
BATCH_SIZE = 8  # our runner's (``TranscriberSpec.batch_size``)
PAUSE = 0.3  # seconds of silence between sentences
HTTP = httpx.Client(timeout=3600, limits=httpx.Limits(max_keepalive_connections=0))


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
    direct: list[Heard]  # faster-whisper's sequential call, in process
    ours_timed: list[Heard]  # ours, asked for subtitles: read sequentially
    batched: list[Heard]  # faster-whisper's batched pipeline, in process
    ours: list[Heard]  # ours, asked for JSON: the batched pipeline
    together: list[tuple[float, list[Heard]]]  # one per round: wall time, each client's


# -- the clip ---------------------------------------------------------------------------------
def make_clip(work: Path, seconds: float) -> Clip:
    """Sentences spoken one by one and joined, with a short pause between, until the clip
    lasts at least ``seconds``."""
    from tests.support.speech import spoken_clip

    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng)")
    path, text, measured = spoken_clip(work, seconds, PAUSE)
    return Clip(path, text, measured)


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


def transcribe_ours(url: str, audio: bytes, form: str = "json") -> Heard:
    """One request; ``form`` "srt" asks for segment times (a sequential read), "json" not
    (the batched pipeline reads a clip of a minute or more)."""
    started = time.perf_counter()
    response = HTTP.post(
        url + "/v1/audio/transcriptions",
        files={"file": ("clip.wav", audio, "audio/wav")},
        data={"model": MODEL, "response_format": form},
    )
    response.raise_for_status()
    if form == "json":
        return Heard(time.perf_counter() - started, response.json()["text"])
    cues = response.text.strip().split("\n\n")  # number, times, text
    return Heard(time.perf_counter() - started, " ".join(c.split("\n", 2)[2] for c in cues))


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
    batched = batched_arguments(arguments, BATCH_SIZE)
    pipeline = BatchedInferencePipeline(model)
    audio = clip.path.read_bytes()
    transcribe_ours(url, audio)  # the runner starts and loads on its first request
    transcribe_ours(url, audio, "srt")
    transcribe_direct(model, clip, arguments)  # and this one's first call allocates
    transcribe_batched(pipeline, clip, batched)  # the VAD model loads, the batch allocates
    results = Results([], [], [], [], [])
    sides: dict[str, tuple[list[Heard], Callable[[], Heard]]] = {
        "direct": (results.direct, lambda: transcribe_direct(model, clip, arguments)),
        "ours, srt": (results.ours_timed, lambda: transcribe_ours(url, audio, "srt")),
        "batched": (results.batched, lambda: transcribe_batched(pipeline, clip, batched)),
        "ours, json": (results.ours, lambda: transcribe_ours(url, audio)),
    }
    order = list(sides)
    for n in range(rounds):
        for side in order if n % 2 == 0 else order[::-1]:
            kept, run = sides[side]
            kept.append(run())
            print(f"round {n + 1} {side}: {kept[-1].seconds:.2f} s", flush=True)
        results.together.append(transcribe_together(url, audio))
        print(f"round {n + 1} {CLIENTS} clients: {results.together[-1][0]:.2f} s", flush=True)
    return results


# -- the report -------------------------------------------------------------------------------
def report(results: Results, clip: Clip, args, loads: tuple[str, str], compute: str) -> str:
    from tests.support.speech import word_error_rate

    def wer(heard: list[Heard]) -> str:
        rates = {f"{word_error_rate(clip.text, each.text):.3f}" for each in heard}
        return " / ".join(sorted(rates))

    def wall(heard: list[Heard]) -> float:
        return statistics.median(each.seconds for each in heard)

    direct, batched = wall(results.direct), wall(results.batched)
    ours_timed, ours = wall(results.ours_timed), wall(results.ours)
    together = statistics.median(wall for wall, _ in results.together)
    each_client = [heard for _, round_ in results.together for heard in round_]
    rows = [
        ("faster-whisper, sequential, direct", direct, direct / clip.seconds, "", results.direct),
        (
            "ours, `response_format=srt` (sequential)",
            ours_timed,
            ours_timed / clip.seconds,
            f"{ours_timed / direct - 1:+.1%} vs sequential direct",
            results.ours_timed,
        ),
        (
            f"faster-whisper, `BatchedInferencePipeline` batch {BATCH_SIZE}, direct",
            batched,
            batched / clip.seconds,
            f"{batched / direct:.2f}x sequential direct",
            results.batched,
        ),
        (
            "ours, `response_format=json` (batched)",
            ours,
            ours / clip.seconds,
            f"{ours / batched - 1:+.1%} vs batched direct",
            results.ours,
        ),
        (
            f"ours, json, {CLIENTS} clients at once (total)",
            together,
            together / (CLIENTS * clip.seconds),
            f"{together / (CLIENTS * batched):.2f}x {CLIENTS} batched direct",
            each_client,
        ),
    ]
    overheads = (ours_timed / direct, ours / batched)
    lines = [
        f"Machine: {machine()}. Load average (1/5/15 min) before: {loads[0]}; after: "
        f"{loads[1]} (the run's own {args.threads} threads count there).  ",
        f"Command: `python bench/bench_audio.py --threads {args.threads} --seconds "
        f"{args.seconds:g} --rounds {args.rounds}`.  ",
        f"Whisper base (CTranslate2, compute type `auto`: {compute} here), {args.threads} "
        f"threads on both, faster-whisper's arguments as our runner passes them (beam 5, "
        f"temperature fallback 0-1.0, no VAD, language detected); a {clip.seconds:.1f} s "
        f"espeak-ng clip (22 kHz mono WAV, {len(clip.text.split())} words). Medians of "
        f"{args.rounds} rounds, the four single rows alternating; our runner and the "
        "batched pipeline warmed by one call each. "
        f"Real-time factor: wall / audio seconds ({CLIENTS} clips for the row of {CLIENTS} "
        f"clients). Our runner serves one request at a time: {CLIENTS} clients queue, so "
        "that row shows what the queue costs, not a speed-up. The batched rows: faster-whisper's "
        "`BatchedInferencePipeline`, its default Silero VAD cutting the clip into chunks of up "
        "to 30 s, batched through the encoder and a beam-5 decode at temperature 0 only (it has "
        "no fallback) and without the previous text as prompt; its segments are whole chunks, "
        "which is why ours uses it only where segment times do not show.",
        "",
        "| | wall s (median) | real-time factor | vs | word error rate |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {name} | {wall:.2f} | {rtf:.3f} | {vs} | {wer(heard)} |"
            for name, wall, rtf, vs, heard in rows
        ),
        "",
        f"Every wall time, s: sequential direct {_times(results.direct)}; ours srt "
        f"{_times(results.ours_timed)}; batched direct {_times(results.batched)}; ours json "
        f"{_times(results.ours)}; {CLIENTS} clients "
        f"{', '.join(f'{wall:.2f}' for wall, _ in results.together)}. "
        f"Target: ours under 5% over the same pipeline called directly "
        f"({'met' if max(overheads) < 1.05 else 'missed'}: "
        f"{overheads[0] - 1:+.1%} sequential, {overheads[1] - 1:+.1%} batched).",
    ]
    return "\n".join(lines)


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
