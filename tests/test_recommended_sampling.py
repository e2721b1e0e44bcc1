"""A model's recommended sampling (GGUF ``general.sampling.*``) is used when the request and the
Modelfile say nothing, shown by ``show``, and never obeyed out of range."""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import pytest

from localllm.app.cli.show_view import render_show
from localllm.daemon.api.native_models import ShowResponse
from localllm.daemon.inference.recommended import RecommendedSampling
from localllm.daemon.inference.resolve import resolve_model
from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.importer import ModelExtras
from localllm.model_registry.recommended_sampling import recommended_sampling
from localllm.model_registry.store import Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store

GREEDY_BY_THE_AUTHORS = {"temp": 0.0, "top_k": 1, "top_p": 0.95, "penalty_repeat": 1.0}
HI = [{"role": "user", "content": "Tell me something"}]


def test_keys_become_options_checked_against_the_table():
    metadata = {
        "general.sampling.temp": 0.6000000238418579,  # as float32 stores 0.6
        "general.sampling.top_k": 20,
        "general.sampling.top_p": 0.949999988079071,
        "general.sampling.min_p": 0.0,
        "general.sampling.penalty_last_n": 128.0,
        "general.sampling.penalty_repeat": 1.05,
        "general.sampling.mirostat": 2,  # not a sampler we run
        "general.name": "x",
    }
    assert recommended_sampling(metadata) == {
        "temperature": 0.6,
        "top_k": 20,
        "top_p": 0.95,
        "min_p": 0.0,
        "repeat_last_n": 128,
        "repeat_penalty": 1.05,
    }


def test_a_hostile_file_sets_nothing_a_request_could_not():
    metadata = {
        "general.sampling.temp": 1e9,
        "general.sampling.top_k": 2.5,
        "general.sampling.top_p": True,
        "general.sampling.min_p": "0.1",
        "general.sampling.penalty_last_n": -7,
        "general.sampling.penalty_repeat": float("nan"),
    }
    assert recommended_sampling(metadata) == {}


def test_recorded_at_import(tmp_path):
    path = write_tiny_model(tmp_path / "m.gguf", sampling={"temp": 0.6, "top_k": 20})
    assert read_gguf_info(path).sampling == {"temperature": 0.6, "top_k": 20}
    store = make_store(tmp_path / "store", {"qwenish": path})
    assert resolve_model(Store(store), "qwenish").recommended_sampling == {
        "temperature": 0.6,
        "top_k": 20,
    }


def test_models_imported_before_it_was_recorded_read_it_from_the_file(tmp_path):
    path = write_tiny_model(tmp_path / "m.gguf", sampling={"temp": 0.2})
    store = make_store(tmp_path / "store", {"older": path})
    model = resolve_model(Store(store), "older")
    older = dataclasses.replace(model, recommended_sampling=None)
    assert asyncio.run(RecommendedSampling().of(older)) == {"temperature": 0.2}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("recommended")
    greedy = write_tiny_model(root / "greedy.gguf", seed=9, sampling=GREEDY_BY_THE_AUTHORS)
    plain = write_tiny_model(root / "plain.gguf", seed=9)
    overridden = (greedy, ModelExtras(parameters={"temperature": 1.5, "top_k": 0}))
    store = make_store(root / "store", {"greedy": greedy, "plain": plain, "overridden": overridden})
    with Daemon(store, root / "logs") as running:
        yield running


def chat(daemon, model: str, seed: int, **options) -> str:
    body = {
        "model": model,
        "messages": HI,
        "stream": False,
        "options": {"seed": seed, "num_predict": 16, **options},
    }
    response = httpx.post(daemon.url + "/api/chat", json=body, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()["message"]["content"]


@pytest.mark.slow
def test_the_authors_sampling_is_used_when_nothing_overrides_it(daemon):
    """Greedy by the file: every seed gives one reply. The same weights without the keys (and
    with a Modelfile or a request that sets sampling) give each seed its own."""
    assert len({chat(daemon, "greedy", seed) for seed in (1, 2, 3)}) == 1
    assert len({chat(daemon, "plain", seed) for seed in (1, 2, 3)}) > 1
    assert len({chat(daemon, "overridden", seed) for seed in (1, 2, 3)}) > 1
    hot = {chat(daemon, "greedy", seed, temperature=1.5, top_k=0) for seed in (1, 2, 3)}
    assert len(hot) > 1


@pytest.mark.slow
def test_show_lists_the_recommended_sampling(daemon):
    response = httpx.post(daemon.url + "/api/show", json={"model": "greedy"}, timeout=30)
    info = ShowResponse.model_validate(response.json())
    assert info.model_info["general.sampling.temp"] == 0.0
    assert info.model_info["general.sampling.top_k"] == 1
    shown = render_show(info)
    assert "Recommended sampling" in shown and "temp            0.0" in shown
    plain = httpx.post(daemon.url + "/api/show", json={"model": "plain"}, timeout=30).json()
    assert not any(key.startswith("general.sampling.") for key in plain["model_info"])
