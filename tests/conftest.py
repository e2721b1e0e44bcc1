"""Shared fixtures: generated GGUF models and temporary stores.

Every test that needs a model gets a real one, written by ``model_registry.tiny_gguf`` in well
under a second, so the suite runs real llama.cpp on real files and needs no network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> Path:
    """A small F16 llama-architecture GGUF (shared, never modified by tests)."""
    from localllm.model_registry.tiny_gguf import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("models") / "tiny.gguf", seed=1)


@pytest.fixture(scope="session")
def tiny_q8_model_path(tmp_path_factory) -> Path:
    from localllm.model_registry.tiny_gguf import write_tiny_model

    return write_tiny_model(
        tmp_path_factory.mktemp("models") / "tiny-q8.gguf", n_embd=64, file_type="Q8_0", seed=2
    )


@pytest.fixture(scope="module")
def tiny_q8_model(tiny_q8_model_path):
    """The tiny Q8_0 model loaded in this process (1 thread), for tests that drive the
    runner's parts directly."""
    import llama_cpp

    from localllm.daemon.runners.worker.model import Model
    from tests.support.runner import make_spec

    llama_cpp.llama_backend_init()
    loaded = Model.load(make_spec(tiny_q8_model_path, num_threads=1))
    yield loaded
    loaded.close()


@pytest.fixture(scope="session")
def thinking_model_path(tmp_path_factory) -> Path:
    """A tiny model that thinks as Qwen3 does (its template opens ``<think>``). Its random
    weights never close the thinking: give ``think_budget`` to make it answer."""
    from localllm.model_registry.tiny_gguf import write_tiny_model

    path = tmp_path_factory.mktemp("models") / "thinker.gguf"
    return write_tiny_model(path, thinking="qwen3", seed=4, file_type="Q8_0")


@pytest.fixture(scope="module")
def harness():
    """The runner tests' event loop, one per module, so runners outlive one ``asyncio.run``."""
    from tests.support.runner import Harness

    h = Harness()
    yield h
    h.close()


@pytest.fixture
def store(tmp_path):
    from localllm.model_registry.store import Store

    return Store(tmp_path / "store")


@pytest.fixture
def imported_store(store, tiny_model_path):
    """A store holding ``tiny:latest`` imported from the shared tiny model."""
    from localllm.model_registry.importer import import_gguf

    import_gguf(store, "tiny", tiny_model_path)
    return store
