"""The ``deterministic`` option: one slot, flash attention off, and a prompt resumed only after
whole batches read from its start, so an answer is the same whatever was read before and
whatever else the model serves.

Without it, a sequence that shares a ``llama_decode`` with others gets other sums: on the
256-wide F16 model below, with flash attention off and 4 slots, 2 to 5 of 24 logprobs moved (by
about 5e-6) beside 3 other streams. So a deterministic request never shares a batch; and a
prompt resumed anywhere in a cached prefix is read in other batches than a cold one, which
rounds apart on Gemma 3 270M's repacked weights (``tests/test_resumed_reads.py``), so it is
resumed only where a cold read's batches would start.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.settings import Settings
from localllm.model_registry.importer import ModelExtras
from localllm.model_registry.modelfile import parse_modelfile
from tests.support.daemon import Daemon, make_store

PROMPT = "The quick brown fox jumps over the lazy dog and then"
OTHERS = ["Once upon a time there was", "1 2 3 4 5 6", "Hello world, a long prompt to read " * 3]


def options(settings: Settings | None = None, **asked: object):
    return runner_options(merge_options(asked), settings or Settings())


# -- the option ------------------------------------------------------------------------------
def test_deterministic_runs_without_flash_attention_in_one_slot():
    settings = Settings(flash_attention="on", num_parallel=8, prompt_cache_bytes=1 << 30)
    runner = options(settings, deterministic=True)
    assert (runner.flash_attention, runner.num_parallel) == ("off", 1)
    assert runner.deterministic
    # it keeps prompts in RAM and on disk: a state says how much of it was read in whole
    # batches, and only after those is a prompt resumed (``tests/test_resumed_reads.py``)
    assert runner.host_cache_bytes > 0 and runner.prompt_cache_bytes > 0
    assert options(deterministic=True, num_parallel=1).num_parallel == 1


def test_it_is_off_unless_asked():
    runner = options(Settings(flash_attention="on", num_parallel=8), deterministic=False)
    assert (runner.flash_attention, runner.num_parallel) == ("on", 8)
    assert not runner.deterministic and runner.host_cache_bytes > 0
    assert options().flash_attention == "auto"


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, [True]])
def test_only_true_or_false_is_accepted(value):
    with pytest.raises(BadRequestError, match="deterministic must be true or false") as error:
        options(deterministic=value)
    assert error.value.param == "deterministic"


@pytest.mark.parametrize(
    ("asked", "settings", "param", "says"),
    [
        ({"kv_cache_type": "q4_0"}, Settings(), "kv_cache_type", "use kv_cache_type f16"),
        ({}, Settings(kv_cache_type="q8_0"), "kv_cache_type", "use kv_cache_type f16"),
        ({"flash_attention": "on"}, Settings(), "flash_attention", "drop flash_attention on"),
        ({"num_parallel": 4}, Settings(), "num_parallel", "drop num_parallel 4"),
    ],
)
def test_what_it_cannot_run_with_is_refused_saying_what_to_change(asked, settings, param, says):
    with pytest.raises(BadRequestError, match=says) as error:
        options(settings, deterministic=True, **asked)
    assert error.value.param == param


def test_a_modelfile_may_set_it():
    assert parse_modelfile("FROM m\nPARAMETER deterministic true").parameters == {
        "deterministic": True
    }


# -- through a daemon ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("deterministic")
    wide = write_tiny_model(root / "wide.gguf", n_embd=256, n_head=4, seed=3)
    store = make_store(
        root / "store",
        {
            "tiny": tiny_model_path,
            "wide": wide,
            "steady": (tiny_model_path, ModelExtras(parameters={"deterministic": True})),
        },
    )
    with Daemon(store, root / "logs") as running:
        yield running


def generate(daemon: Daemon, model: str = "tiny", **asked: object) -> httpx.Response:
    body = {"model": model, "prompt": "Hi", "stream": False, "options": {"num_predict": 1, **asked}}
    return httpx.post(daemon.url + "/api/generate", json=body, timeout=120)


def running(daemon: Daemon, model: str) -> dict:
    models = httpx.get(daemon.url + "/api/ps", timeout=10).json()["models"]
    return next(m for m in models if m["name"].startswith(model))


@pytest.mark.slow
def test_bad_values_are_400s_on_every_api(daemon):
    assert generate(daemon, deterministic="yes").status_code == 400
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    for path, body in [
        ("/v1/chat/completions", chat),
        ("/v1/messages", chat),
    ]:
        response = httpx.post(
            daemon.url + path, json={**body, "options": {"deterministic": 1}}, timeout=60
        )
        assert response.status_code == 400, (path, response.text)
        assert "deterministic must be true or false" in response.text


@pytest.mark.slow
def test_a_quantized_cache_is_a_400_saying_what_to_change(daemon):
    response = generate(daemon, deterministic=True, kv_cache_type="q4_0")
    assert response.status_code == 400
    assert "use kv_cache_type f16, or drop deterministic" in response.json()["error"]


@pytest.mark.slow
def test_it_never_runs_where_flash_attention_is_on(daemon):
    assert generate(daemon, flash_attention="on").status_code == 200
    assert running(daemon, "tiny")["flash_attention"] == "on"
    assert not running(daemon, "tiny")["deterministic"]
    assert generate(daemon, deterministic=True).status_code == 200
    runner = running(daemon, "tiny")
    assert (runner["flash_attention"], runner["num_parallel"], runner["deterministic"]) == (
        "off",
        1,
        True,
    )


@pytest.mark.slow
def test_a_model_whose_modelfile_asks_for_it_runs_so(daemon):
    assert generate(daemon, "steady").status_code == 200
    assert running(daemon, "steady")["deterministic"]


def logprobs(daemon: Daemon, prompt: str, max_tokens: int = 24) -> list[float]:
    body = {
        "model": "wide",
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 7,
        "logprobs": 3,
        "options": {"deterministic": True},
    }
    response = httpx.post(daemon.url + "/v1/completions", json=body, timeout=300)
    response.raise_for_status()
    return response.json()["choices"][0]["logprobs"]["token_logprobs"]


@pytest.mark.slow
def test_the_same_logprobs_alone_resumed_and_beside_three_other_requests(daemon):
    alone = logprobs(daemon, PROMPT)
    assert logprobs(daemon, PROMPT) == alone  # read again after the cached whole batches
    with ThreadPoolExecutor(4) as pool:
        others = [pool.submit(logprobs, daemon, other, 200) for other in OTHERS]
        beside = pool.submit(logprobs, daemon, PROMPT)
        assert beside.result() == alone
        assert all(len(other.result()) == 200 for other in others)
    assert running(daemon, "wide")["deterministic"]
