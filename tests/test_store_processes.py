"""The store under crashes and concurrency, with real processes.

A writer is killed with SIGKILL at random points; two processes import and remove models that
share blobs at the same time. After each, every listed model must be complete and verified.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from localllm.model_registry.store import Store
from tests.support.store import assert_store_consistent

pytestmark = pytest.mark.slow

WRITER = textwrap.dedent(
    """
    import os, sys
    from localllm.model_registry.store import Store
    from tests.support.store import put_model
    store = Store(sys.argv[1])
    i = 0
    while True:
        payload = os.urandom(256 * 1024)
        put_model(store, f"m{i % 5}", payload, b"shared layer")
        if i % 3 == 0:
            store.copy(f"m{i % 5}", f"copy{i % 4}")
        if i % 4 == 0:
            store.remove(f"m{(i + 2) % 5}") if store.exists(f"m{(i + 2) % 5}") else None
        i += 1
        print(i, flush=True)
    """
)


def start(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], cwd=".", stdout=subprocess.PIPE, text=True
    )


def test_sigkill_at_random_points_never_leaves_a_broken_model(tmp_path):
    root = tmp_path / "store"
    Store(root)
    rng = random.Random(1234)
    for _ in range(12):
        writer = start(WRITER, str(root))
        for _ in range(rng.randint(1, 6)):  # some rounds done: the kill lands inside the next
            assert writer.stdout.readline(), "the writer died by itself"
        time.sleep(rng.uniform(0, 0.05))  # not to wait for anything: a random point in it
        writer.send_signal(signal.SIGKILL)
        writer.communicate()
        store = Store(root)
        assert_store_consistent(store)
    assert store.list_models(), "the writer never committed a model: the test proved nothing"
    # What a killed writer leaves is at most unreferenced blobs and temp files; prune takes them.
    store.prune(grace_seconds=-1)
    assert_store_consistent(store)
    assert not [p for p in store.layout.blobs_dir.iterdir() if p.name.startswith(".tmp-")]


# Each says "busy" once it has done a few, then goes on until the stop file appears (so each
# ran beside the other all along) and prints how many it did.
IMPORTER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from localllm.model_registry.store import Store
    from tests.support.store import put_model
    store, stop = Store(sys.argv[1]), Path(sys.argv[2])
    i = 0
    while i <= 10 or not stop.exists():
        put_model(store, f"import{i % 7}", b"shared weights " * 4096, f"own {i}".encode())
        i += 1
        if i == 11:
            print("busy", flush=True)
    print(i)
    """
)
REMOVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from localllm.model_registry.errors import ModelNotFoundError
    from localllm.model_registry.store import Store
    store, stop = Store(sys.argv[1]), Path(sys.argv[2])
    removed = 0
    while removed <= 5 or not stop.exists():
        before = removed
        for i in range(7):
            try:
                store.remove(f"import{i}")
                removed += 1
            except ModelNotFoundError:
                pass
        store.prune(grace_seconds=0)
        if before <= 5 < removed:
            print("busy", flush=True)
    print(removed)
    """
)


def test_importing_and_removing_at_once_loses_nothing(tmp_path):
    from tests.support.store import put_model

    root, stop = tmp_path / "store", tmp_path / "stop"
    store = Store(root)
    keeper = put_model(store, "keeper", b"shared weights " * 4096, b"keeper's own")
    importer = start(IMPORTER, str(root), str(stop))
    remover = start(REMOVER, str(root), str(stop))
    try:
        assert importer.stdout.readline() == "busy\n"
        assert remover.stdout.readline() == "busy\n"
    finally:
        stop.touch()
    imported, _ = importer.communicate(timeout=60)
    removed, _ = remover.communicate(timeout=60)
    assert importer.returncode == 0 and remover.returncode == 0
    assert int(imported) > 10 and int(removed) > 5, (imported, removed)
    assert Store(root).read_manifest("keeper") == keeper
    assert_store_consistent(Store(root))
