"""Pull speed: our verified, resumable pull against a plain single-stream httpx download.

Starts the local hub (tests/support/local_hub.py) with a generated GGUF of a few hundred MB,
then measures in one run:

* a plain httpx download of the file to disk (one stream, no hashing, no fsync),
* ``Puller.pull`` into a fresh store (4 range connections, sha256 verified, fsynced, manifest),
* resume overhead: a pull paused half-way and resumed, and a pulling process killed with
  SIGKILL half-way and resumed; bytes served twice are compared with one part per connection.

Each is measured on three networks: plain loopback (CPU-bound), a shared 200 MB/s link, and
a CDN that caps each connection at 50 MB/s.

Run: ``.venv/bin/python bench/bench_pull.py [--size-mb 400] [--rounds 5] [--no-write]``.
Results go to bench/RESULTS.md under "## Pull".
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import multiprocessing
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from localllm.model_registry.pull import DownloadOptions, Puller  # noqa: E402
from localllm.model_registry.store import Store  # noqa: E402
from localllm.model_registry.tiny_gguf import write_tiny_model  # noqa: E402
from tests.support.local_hub import LocalHub  # noqa: E402
from tests.support.polling import wait_for  # noqa: E402
from tests.support.pulls import PullThread, sidecar_completed  # noqa: E402

REPO, FILE, NAME = "bench/Big-GGUF", "Big-F16.gguf", "hf.co/bench/big-gguf"
KILL_SCRIPT = """
import os, sys
from localllm.model_registry.pull import Puller
from localllm.model_registry.store import Store
with Puller(Store(sys.argv[1]), endpoint=os.environ["HF_ENDPOINT"]) as puller:
    for _ in puller.pull(sys.argv[2]):
        pass
"""


def serve_hub(model: Path, connection) -> None:
    """A hub of its own in a child process: a real server is not in the client's process,
    and one here would compete with the client for its GIL."""
    with LocalHub() as hub:
        commit = hub.add_repo(REPO, {FILE: model})
        connection.send((hub.endpoint, f"{hub.endpoint}/{REPO}/resolve/{commit}/{FILE}"))
        connection.recv()  # until the parent says stop (or goes away)


@contextlib.contextmanager
def hub_process(model: Path):
    """(endpoint, file URL) of a hub serving ``model`` from another process."""
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.Process(target=serve_hub, args=(model, theirs), daemon=True)
    process.start()
    try:
        yield ours.recv()
    finally:
        ours.send("stop")
        process.join(10)


def make_model(folder: Path, size_mb: int) -> Path:
    """A real llama GGUF of about ``size_mb`` MB (F16 weights)."""
    layers = max(1, round(size_mb / 33.5))  # about 33.5 MB per layer at this width
    return write_tiny_model(folder / "big.gguf", n_embd=1024, n_layer=layers, n_ff=4096, n_head=16)


def plain_download(url: str, destination: Path, *, durable: bool = False) -> float:
    """Seconds to save ``url`` with one stream; ``durable`` adds the fsync a store needs
    (without it, the file is deleted before the kernel has written it to disk)."""
    started = time.perf_counter()
    with (
        httpx.Client(timeout=60) as client,
        client.stream("GET", url, follow_redirects=True) as response,
        destination.open("wb") as stream,
    ):
        response.raise_for_status()
        for chunk in response.iter_raw():
            stream.write(chunk)
        if durable:
            stream.flush()
            os.fsync(stream.fileno())
    elapsed = time.perf_counter() - started
    destination.unlink()
    return elapsed


def our_pull(endpoint: str, root: Path) -> float:
    """Seconds for one ``pull`` (metadata call to manifest) by a ready ``Puller``, as the
    daemon holds one; building the Puller (catalog, HTTP clients) is left out."""
    store = Store(root)
    with Puller(store, endpoint=endpoint) as puller:
        started = time.perf_counter()
        events = list(puller.pull(NAME))
        elapsed = time.perf_counter() - started
    assert events[-1].status == "success", events[-1]
    shutil.rmtree(root)
    return elapsed


def hash_seconds(path: Path) -> float:
    """CPU cost of sha256 over the file (read from the page cache): what plain never pays."""
    started = time.perf_counter()
    with path.open("rb") as stream:
        hashlib.file_digest(stream, "sha256")
    return time.perf_counter() - started


def pause_and_resume(hub: LocalHub, root: Path, size: int, options: DownloadOptions) -> dict:
    store = Store(root)
    hub.reset_counters()
    with Puller(store, endpoint=hub.endpoint, options=options) as puller:
        pulling = PullThread(puller, NAME)
        pulling.start()
        pulling.wait_for_bytes(size // 2, timeout=120)
        puller.pause(NAME)
        status = pulling.finish(120)
        hub.wait_idle()
        state_path = next(store.layout.blobs_dir.glob("*.partial.json"))
        recorded, before = sidecar_completed(state_path), hub.bytes_served(REPO, FILE)
        hub.reset_counters()
        started = time.perf_counter()
        assert list(puller.pull(NAME))[-1].status == "success"
        resume_seconds = time.perf_counter() - started
    after = hub.bytes_served(REPO, FILE)
    shutil.rmtree(root)
    return {
        "status": status,
        "recorded": recorded,
        "refetched": before + after - size,
        "resume_seconds": resume_seconds,
    }


def kill_and_resume(hub: LocalHub, root: Path, size: int, options: DownloadOptions) -> dict:
    store = Store(root)
    hub.reset_counters()
    env = os.environ | {"HF_ENDPOINT": hub.endpoint, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", KILL_SCRIPT, str(root), NAME]
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    state_path = None

    def half_done() -> bool:
        nonlocal state_path
        state_path = state_path or next(store.layout.blobs_dir.glob("*.partial.json"), None)
        return state_path is not None and sidecar_completed(state_path) >= size // 2

    try:
        if not wait_for(half_done, 120):
            raise SystemExit("half of the download never arrived")
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    hub.wait_idle()
    recorded, before = sidecar_completed(state_path), hub.bytes_served(REPO, FILE)
    hub.reset_counters()
    with Puller(store, endpoint=hub.endpoint, options=options) as puller:
        assert list(puller.pull(NAME))[-1].status == "success"
    after = hub.bytes_served(REPO, FILE)
    shutil.rmtree(root)
    return {"recorded": recorded, "refetched": before + after - size}


def machine() -> str:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor() or "unknown",
    )  # fmt: skip
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    python = platform.python_version()
    return f"{os.cpu_count()} cores (nproc), {cpu}, {mem_kb / 2**20:.1f} GiB RAM, Python {python}"


def write_results(text: str) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    existing = path.read_text() if path.exists() else "# Benchmark results\n"
    start = existing.find("## Pull")
    if start == -1:
        updated = existing.rstrip("\n") + "\n\n" + text
    else:
        end = existing.find("\n## ", start + 1)
        updated = existing[:start] + text + (existing[end + 1 :] if end != -1 else "")
    path.write_text(updated.rstrip("\n") + "\n")


SCENARIOS = (
    # (label, shared link bytes/s, per-connection cap bytes/s)
    ("loopback, no limit (CPU- and disk-bound)", None, None),
    ("a 200 MB/s link shared by all connections", 200e6, None),
    ("a CDN that caps each connection at 50 MB/s", None, 50e6),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    options = DownloadOptions()
    work = Path(tempfile.mkdtemp(prefix="bench-pull-"))
    timings: list[tuple[str, list[float], list[float], list[float]]] = []
    try:
        model = make_model(work, args.size_mb)
        size = model.stat().st_size
        hashing = min(hash_seconds(model) for _ in range(3))
        with hub_process(model) as (endpoint, url):  # CPU-bound: the hub in its own process
            timings.append(compare(SCENARIOS[0][0], endpoint, url, work, args.rounds))
        with LocalHub() as hub:  # throttled: the in-process hub applies the limits
            commit = hub.add_repo(REPO, {FILE: model})
            url = f"{hub.endpoint}/{REPO}/resolve/{commit}/{FILE}"
            for label, link, cap in SCENARIOS[1:]:
                hub.set_link_rate(link)
                hub.set_throttle(REPO, FILE, cap)
                timings.append(compare(label, hub.endpoint, url, work, args.rounds))
            hub.set_link_rate(None)
            hub.set_throttle(REPO, FILE, None)
            paused = pause_and_resume(hub, work / "store-pause", size, options)
            killed = kill_and_resume(hub, work / "store-kill", size, options)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = render(size, timings, paused, killed, options, args, hashing)
    print(report)
    if not args.no_write:
        write_results(report)


def compare(label: str, endpoint: str, url: str, work: Path, rounds: int) -> tuple:
    """Alternating rounds of plain, plain fsynced, and our pull, so load changes hit all."""
    plain, synced, ours = [], [], []
    for round_ in range(rounds):
        plain.append(plain_download(url, work / "plain.bin"))
        synced.append(plain_download(url, work / "plain.bin", durable=True))
        ours.append(our_pull(endpoint, work / f"store-{round_}"))
        print(f"{label}: plain {plain[-1]:.2f} s, fsynced {synced[-1]:.2f} s, "
              f"pull {ours[-1]:.2f} s", flush=True)  # fmt: skip
    return label, plain, synced, ours


def render(size, timings, paused, killed, options, args, hashing) -> str:
    mb = size / 1e6
    part_mib, connections = options.part_size / 2**20, options.connections
    bound_mib = options.part_size * connections / 2**20
    command = ".venv/bin/python bench/bench_pull.py"
    if args.size_mb != 400 or args.rounds != 5:
        command += f" --size-mb {args.size_mb} --rounds {args.rounds}"
    rows = []
    for label, plain, synced, ours in timings:
        runs = {"plain": plain, "synced": synced, "ours": ours}
        rate = {name: (mb / min(t), mb / statistics.median(t)) for name, t in runs.items()}
        cells = [f"{best:.0f} ({median:.0f})" for best, median in rate.values()]
        ratios = [
            f"**{rate['ours'][0] / rate[peer][0]:.2f}x** ({rate['ours'][1] / rate[peer][1]:.2f}x)"
            for peer in ("plain", "synced")
        ]
        seconds = " / ".join(_list(times) for times in (plain, synced, ours))
        rows.append(f"| {label} | {' | '.join(cells)} | {' | '.join(ratios)} | {seconds} |")
    resumes = "\n".join(
        f"| {label} | {run['recorded'] / 1e6:.1f} MB | {run['refetched'] / 2**20:.2f} MiB |"
        for label, run in (
            ("pause, then pull again (in-process)", paused),
            ("`kill -9` of the pulling process, then pull again", killed),
        )
    )
    newline, seconds = "\n", "seconds per round: plain / fsynced / pull"
    return f"""## Pull

Machine: {machine()}; load average {os.getloadavg()[0]:.1f} when the run ended (other
sessions share this machine).
Command: `{command}`. The local hub (tests/support/local_hub.py) serves on 127.0.0.1 and
redirects file URLs to a second "CDN" port: in a process of its own for the unthrottled run
(a real server does not share the client's GIL), in the bench's process where it applies the
limits. The file is a generated {mb:.1f} MB F16 GGUF, written to this machine's disk;
{len(timings[0][1])} alternating rounds (plain, fsynced, pull, plain, ...) so all see the same
load; best round, median in brackets.

* plain: httpx, one stream, written to a file that is deleted at once; no hashing, no fsync,
  so the kernel never writes it to disk.
* fsynced: the same, with the fsync that a store which survives a power cut needs.
* pull: `Puller.pull` into a new store, from the metadata call to the manifest:
  {connections} range connections x {part_mib:.0f} MiB parts, sha256 verified (hashed while
  downloading), fsynced, config and manifest written.

| network | plain MB/s | fsynced MB/s | pull MB/s | pull / plain | pull / fsynced | {seconds} |
| --- | ---: | ---: | ---: | ---: | ---: | --- |
{newline.join(rows)}

On loopback nothing slows the bytes down but this machine: the plain figure is the page cache,
the fsynced one adds the disk, and the hub, the client and the hashing share 2 cores; sha256 of
this file alone takes {hashing:.2f} s of one core ({mb / hashing:.0f} MB/s), work neither plain
download does. With a network in the way the hashing and the writeback overlap the transfer
and only the tail (the last parts, the fsync, the manifest) is extra; where a CDN limits each
connection, the range connections add up.

Resume after an interruption at about 50% (bound: one part per connection = {bound_mib:.0f} MiB):

| interruption | progress kept | bytes served twice |
| --- | ---: | ---: |
{resumes}

"Bytes served twice" counts what the hub sent in both runs, including bytes that were still
in socket buffers when the first run stopped. The resumed pull after the pause took
{paused["resume_seconds"]:.2f} s for the remaining {(size - paused["recorded"]) / 1e6:.1f} MB.
"""


def _list(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


if __name__ == "__main__":
    main()
