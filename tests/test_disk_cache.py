"""The prompt cache on disk, through real runner processes: a runner that reads a prompt leaves
its state in the cache folder when it exits, and a fresh runner (another load, another daemon)
reads that state back instead of the prompt: the same tokens with the same logprobs as the
cold read (flash attention off, where resuming is exact on this model:
``tests/test_resumed_reads.py``). A file cut short, with a flipped bit, from another model,
build or settings, or a link where a file should be is dropped, said in the runner's log, and
the prompt read again; a disk that is nearly full stops the writing, never the serving.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import string
from dataclasses import replace
from pathlib import Path

import pytest

from localllm.daemon.runners.types import SamplingParams
from tests.support.runner import collect, make_spec
from tests.support.small_disk import small_disk

BATCH = 32  # the cache's block: a prompt is stored from one batch on
GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_tokens=6, logprobs=3)


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(n))


SYSTEM = f"<|im_start|>system\n{_words(90, 1)}<|im_end|>\n"
PROMPT = f"{SYSTEM}<|im_start|>user\nwhat is the first word?<|im_end|>\n<|im_start|>assistant\n"
OTHER = f"{SYSTEM}<|im_start|>user\nsay something else<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture
def spec(tiny_model_path, tmp_path):
    return make_spec(
        tiny_model_path,
        num_ctx=1024,
        num_parallel=2,
        num_batch=BATCH,
        flash_attention="off",
        host_cache_bytes=64 << 20,
        prompt_cache_dir=str(tmp_path / "prompt-cache"),
        prompt_cache_bytes=1 << 30,
    )


def _read(harness, spec, prompt: str, log: Path | None = None):
    """``prompt`` read by a runner of its own, stopped after (it writes what it read)."""
    runner = harness.start(spec, log_path=log)
    try:
        stream = harness.run(collect(runner, prompt, GREEDY))
        status = harness.run(runner.status())
    finally:
        harness.run(runner.stop(), timeout=60)
    return stream, status["disk_cache"]


def _files(spec) -> list[Path]:
    return sorted(Path(spec.prompt_cache_dir).glob("*/*.kv"))


def _same_answer(ours, theirs) -> bool:
    return ours.token_ids == theirs.token_ids and [e.logprobs for e in ours.events] == [
        e.logprobs for e in theirs.events
    ]


def test_a_fresh_runner_reads_a_stored_prompt_back_as_a_cold_read(harness, spec):
    cold, _ = _read(harness, spec, PROMPT)
    assert cold.done.prompt_evaluated == cold.done.prompt_tokens
    assert cold.done.prompt_disk_tokens == 0
    (stored,) = _files(spec)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700

    warm, disk = _read(harness, spec, PROMPT)
    assert warm.done.prompt_disk_tokens == warm.done.prompt_tokens - 1  # all but the last
    assert warm.done.prompt_evaluated == 1
    assert warm.done.prompt_disk_bytes == stored.stat().st_size
    assert warm.done.prompt_disk_seconds > 0
    assert disk["hits"] == 1 and disk["bytes_read"] == stored.stat().st_size
    assert _same_answer(warm, cold)


def test_a_prompt_that_starts_the_same_way_resumes_where_they_part(harness, spec):
    _read(harness, spec, PROMPT)
    other, _ = _read(harness, spec, OTHER)
    system_tokens = len(SYSTEM.split())  # fewer words than tokens: a floor
    assert other.done.prompt_disk_tokens >= system_tokens
    assert other.done.prompt_evaluated < other.done.prompt_tokens - system_tokens
    cold, _ = _read(harness, replace(spec, prompt_cache_bytes=0), OTHER)
    assert _same_answer(other, cold)


def test_nothing_is_kept_when_it_is_off_or_the_prompt_is_short(harness, spec):
    _read(harness, replace(spec, prompt_cache_bytes=0), PROMPT)
    _read(harness, spec, "<|im_start|>user\nhi<|im_end|>\n")  # under one batch
    assert _files(spec) == []


def _cut_short(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _flip_a_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) * 3 // 4] ^= 0x10  # in the state, past the header and the tokens
    path.write_bytes(bytes(data))


def _a_link(path: Path) -> None:
    target = path.with_name("elsewhere")
    path.rename(target)
    path.symlink_to(target)


@pytest.mark.parametrize(
    ("damage", "why"),
    [(_cut_short, "cut short"), (_flip_a_bit, "checksum"), (_a_link, "not a regular file")],
    ids=["cut-short", "flipped-bit", "symlink"],
)
def test_a_damaged_file_is_dropped_said_in_the_log_and_the_prompt_read_again(
    harness, spec, tmp_path, damage, why
):
    cold, _ = _read(harness, spec, PROMPT)
    (stored,) = _files(spec)
    damage(stored)
    log = tmp_path / "runner.log"
    again, disk = _read(harness, spec, PROMPT, log)
    assert again.done.prompt_disk_tokens == 0
    assert again.done.prompt_evaluated == again.done.prompt_tokens
    assert _same_answer(again, cold)
    assert disk["dropped"] == 1 and disk["hits"] == 0, disk
    said = [line for line in log.read_text().splitlines() if "prompt cache: dropped" in line]
    assert said and why in said[0], log.read_text()
    assert str(tmp_path) not in said[0]  # the file's name, never where it lives


def test_a_file_of_another_model_build_or_setting_is_never_read(harness, spec, tmp_path):
    """States are kept apart by what makes them unusable elsewhere (the model's files, KV
    type, flash attention, batch, the llama.cpp build); a file moved among another's is
    refused by its header."""
    _read(harness, spec, PROMPT)
    (stored,) = _files(spec)
    other = replace(spec, num_batch=2 * BATCH)  # another identity: another folder
    _read(harness, other, _words(120, 7))  # a prompt of its own, stored
    (folder,) = [f for f in Path(spec.prompt_cache_dir).iterdir() if f != stored.parent]
    shutil.copy(stored, folder / stored.name)
    log = tmp_path / "other.log"
    again, disk = _read(harness, other, PROMPT, log)
    assert again.done.prompt_disk_tokens == 0 and disk["dropped"] == 1
    assert "another model" in log.read_text()
    assert stored.exists()  # its own runner's file is untouched


@pytest.fixture
def nearly_full(tmp_path):
    with small_disk(tmp_path / "small-disk", "1m") as folder:
        yield folder


def test_a_nearly_full_disk_stops_the_writing_not_the_serving(harness, spec, nearly_full, tmp_path):
    small = replace(spec, prompt_cache_dir=str(nearly_full / "prompt-cache"))
    log = tmp_path / "runner.log"
    served, _ = _read(harness, small, PROMPT, log)  # written (or not) once it is served
    assert served.done.reason == "length" and served.token_ids
    assert _files(small) == []
    assert "nearly full" in log.read_text()
    again, _ = _read(harness, small, PROMPT, log)
    assert again.token_ids == served.token_ids and again.done.prompt_disk_tokens == 0
