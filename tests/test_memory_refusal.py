"""Never an OOM kill: a load whose memory plan does not fit is refused before any runner starts,
with the plan's figures and what would fit; where no context was asked the largest that fits is
picked and said; ``load_anyway`` loads it all the same (after unloading idle models) and the log
says so. The scheduler with fake runners and probes, then the daemon's app with its real runner
factory and a memory probe set low (a real daemon has no setting for that, on purpose)."""

from __future__ import annotations

import logging
import re

import pytest

from localllm.daemon.errors import BadRequestError, InsufficientMemoryError
from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler import LoadTarget, MemoryInfo, ModelFootprint, RunnerOptions
from localllm.daemon.scheduler.context_size import size_text
from localllm.daemon.scheduler.loader import RunnerLoader
from localllm.daemon.server.app import create_app
from localllm.daemon.settings import Settings
from localllm.model_registry.modelfile import parse_modelfile
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.in_process import app_client, app_settings
from tests.test_placement import card, gpu_part
from tests.test_scheduler import Harness, run

GIB, MIB = 1 << 30, 1 << 20
HEADROOM = 0.8  # the scheduler plans for 80% of free memory
OPTIONS = RunnerOptions(num_ctx=32768, num_parallel=4)
NUMBER = r"[\d.,]+ [KMG]iB"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> LoadTarget:
    path = write_tiny_model(tmp_path_factory.mktemp("m") / "m.gguf", n_layer=4, n_embd=256)
    footprint = ModelFootprint(path.stat().st_size, 4, 256, 4, 4)
    return LoadTarget("m", (str(path),), footprint, n_ctx_train=131_072)


def ram(target: LoadTarget, num_ctx: int, slots: int) -> int:
    """The RAM part of ``target``'s plan at ``slots`` slots of ``num_ctx`` tokens, no GPU."""
    spec = RunnerSpec(target.name, target.model_paths, num_ctx=num_ctx, num_parallel=slots)
    return run(RunnerLoader(None, lambda: []).plan(target, spec)).ram_bytes


def short_of_memory(h: Harness, free: float) -> None:
    """The machine has ``free`` bytes to plan for (after the headroom)."""
    h.memory = MemoryInfo(total=64 * GIB, available=int(free / HEADROOM) + 1)


def test_a_load_that_does_not_fit_is_refused_with_its_figures_and_what_fits(model):
    """Room for 1 slot of 32,768 tokens, or 4 shorter ones, not 4 of 32,768: refused before
    the runner factory is called, saying each."""
    h = Harness()
    short_of_memory(h, (ram(model, 32768, 1) + ram(model, 32768, 2)) / 2)
    with pytest.raises(InsufficientMemoryError) as caught:
        run(h.scheduler.acquire(model, OPTIONS))
    assert h.started == [] and h.scheduler.pending == 0 and h.live() == []
    error = caught.value
    assert (error.needed, error.memory) == (ram(model, 32768, 4), "RAM")
    message = str(error)
    figures = (
        rf"^model 'm' needs {NUMBER} of RAM \(weights {NUMBER}, KV cache {NUMBER} for 4 x "
        rf"32,768 tokens, compute {NUMBER}, logits {NUMBER}\) but only {NUMBER} is free "
        r"\(keeping 20% headroom\); "
    )
    assert re.match(figures, message), message
    assert f"needs {size_text(error.needed)} of RAM" in message
    found = re.search(
        r"it fits at ([\d,]+) tokens a slot \(num_ctx (\d+)\), or with 1 slot of "
        r"32,768 tokens \(num_parallel 1\); ",
        message,
    )
    assert found, message
    shorter = int(found[2])
    assert found[1] == f"{shorter:,}" and shorter % 256 == 0
    assert ram(model, shorter, 4) <= error.available < ram(model, shorter + 256, 4)
    assert ram(model, 32768, 1) <= error.available < ram(model, 32768, 2)
    assert message.endswith(
        "close other programs, unload models, or load it anyway with the option load_anyway "
        "(`localllm run --load-anyway`)"
    )


def test_the_plan_says_it_does_not_fit_and_what_would(model):
    """What ``show --plan`` reads: the plan, whether it fits the memory free now, and what
    would."""
    h = Harness()
    short_of_memory(h, (ram(model, 32768, 1) + ram(model, 32768, 2)) / 2)
    plan = run(h.scheduler.plan(model, OPTIONS))
    assert not plan.fits and plan.ram_bytes > plan.ram_free
    assert plan.suggestion.startswith("it fits at ") and plan.suggestion.endswith(
        "or with 1 slot of 32,768 tokens (num_parallel 1)"
    )
    short_of_memory(h, ram(model, 32768, 4))
    assert run(h.scheduler.plan(model, OPTIONS)).fits


def test_with_no_context_asked_the_largest_that_fits_is_picked_and_said(model, caplog):
    h = Harness()
    free = (ram(model, 16384, 4) + ram(model, 32768, 4)) / 2  # flash attention on in both
    short_of_memory(h, free)
    options = RunnerOptions(num_ctx=0, num_parallel=4)
    with caplog.at_level(logging.INFO, "localllm.scheduler"):
        lease = run(h.scheduler.acquire(model, options))
    chosen = lease.spec.num_ctx
    assert 16384 <= chosen < 32768 and ram(model, chosen, 4) <= free < ram(model, chosen + 256, 4)
    (status,) = h.scheduler.status()
    said = f"the largest context that fits: {chosen:,} tokens (4 slots, {size_text(free)} free)"
    assert status.context_reason == said  # what ps and show report
    assert f"ctx {chosen} ({said})" in caplog.text  # and the load log


def test_load_anyway_loads_it_and_says_so(model, caplog):
    h = Harness()
    short_of_memory(h, ram(model, 32768, 1))
    anyway = RunnerOptions(num_ctx=32768, num_parallel=4, load_anyway=True)
    with caplog.at_level(logging.WARNING, "localllm.scheduler"):
        lease = run(h.scheduler.acquire(model, anyway))
    assert len(h.started) == 1 and lease.spec.num_ctx == 32768
    needs = size_text(ram(model, 32768, 4))
    assert f"loading m anyway (load_anyway), though its plan needs {needs} of RAM" in caplog.text


def test_load_anyway_still_unloads_the_idle_models_first(model, tmp_path):
    other = write_tiny_model(tmp_path / "o.gguf", n_layer=2, seed=4)
    idle = LoadTarget("o", (str(other),), ModelFootprint(other.stat().st_size, 2, 64, 4, 4))

    one_slot = ram(model, 32768, 1)

    async def scenario():
        h = Harness()
        async with h.scheduler.lease(idle, RunnerOptions(num_ctx=512, num_parallel=1)):
            pass
        short_of_memory(h, one_slot)  # with o unloaded too: no room for 4 slots
        anyway = RunnerOptions(num_ctx=32768, num_parallel=4, load_anyway=True)
        async with h.scheduler.lease(model, anyway):
            assert h.live() == ["m"] and h.started[0].stopped

    run(scenario())


def test_gpu_layers_asked_for_that_the_gpu_cannot_hold_are_refused(model):
    """``num_gpu: -1`` on a card that holds 3 of the 5 layers: refused with the GPU part and
    what fits; layers left to the daemon are placed to fit instead."""
    options = RunnerOptions(num_ctx=512, num_parallel=2, num_gpu=-1)
    between = (gpu_part(model, 3) + gpu_part(model, 4)) // 2
    h = Harness(gpu_backend=True, free_vram=card(between))
    with pytest.raises(InsufficientMemoryError) as caught:
        run(h.scheduler.acquire(model, options))
    assert h.started == []
    message = str(caught.value)
    assert re.match(
        rf"^model 'm' needs {NUMBER} of VRAM \(5/5 layers on the GPU: weights {NUMBER}, KV "
        rf"cache {NUMBER} for 2 x 512 tokens, compute {NUMBER}\) but only {NUMBER} is free on "
        r"the GPU \(keeping a margin for the driver\); 3/5 layers fit \(num_gpu 3\); ",
        message,
    ), message
    assert caught.value.needed == gpu_part(model, 5) and caught.value.available == between
    plan = run(h.scheduler.plan(model, options))  # what show --plan says beforehand
    assert not plan.fits and plan.suggestion == "3/5 layers fit (num_gpu 3)"
    anyway = RunnerOptions(num_ctx=512, num_parallel=2, num_gpu=-1, load_anyway=True)
    assert run(h.scheduler.acquire(model, anyway)).spec.num_gpu_layers == 5
    placed = Harness(gpu_backend=True, free_vram=card(between))
    auto = RunnerOptions(num_ctx=512, num_parallel=2)
    assert run(placed.scheduler.acquire(model, auto)).spec.num_gpu_layers == 3


def test_load_anyway_is_an_option_and_a_modelfile_parameter():
    assert runner_options(merge_options({}), Settings()).load_anyway is False
    asked = merge_options({"load_anyway": False}, {"load_anyway": True})
    assert runner_options(asked, Settings()).load_anyway is True
    parsed = parse_modelfile("FROM m\nPARAMETER load_anyway true").parameters
    assert parsed == {"load_anyway": True}
    with pytest.raises(BadRequestError, match="load_anyway must be true or false"):
        merge_options({"load_anyway": "yes"})


# -- the daemon, its real runners, a memory probe set low -----------------------------------


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("d") / "t.gguf", context_length=131_072)


class Probe:
    """Free memory as the daemon's scheduler will see it; set by the test."""

    def __init__(self, available: int):
        self.available = available

    def __call__(self) -> MemoryInfo:
        return MemoryInfo(total=64 * GIB, available=self.available)


def test_the_daemon_refuses_before_starting_a_runner_and_loads_anyway(tmp_path, long_model, caplog):
    probe = Probe(1 * MIB)
    settings = app_settings(tmp_path, {"tiny": long_model})
    body = {"model": "tiny", "prompt": "Hi", "stream": False, "options": {"num_predict": 2}}
    with app_client(create_app(settings, memory_probe=probe, gpu_probe=list)) as client:
        refused = client.post("/api/generate", json=body)
        assert refused.status_code == 507
        message = refused.json()["error"]
        assert message.startswith("model 'tiny' needs ") and " of RAM (weights " in message
        assert "load it anyway with the option load_anyway" in message
        chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}]}
        answer = client.post("/v1/chat/completions", json=chat)
        assert answer.status_code == 507
        error = answer.json()["error"]
        assert (error["type"], error["code"]) == ("server_error", "insufficient_memory")
        assert client.get("/api/ps").json()["models"] == []
        assert list((tmp_path / "logs").glob("runner-*.log")) == []  # no runner ever started
        anyway = {**body, "options": {"num_predict": 2, "load_anyway": True}}
        with caplog.at_level(logging.WARNING, "localllm.scheduler"):
            assert client.post("/api/generate", json=anyway).status_code == 200
        assert "loading tiny anyway (load_anyway)" in caplog.text
        [running] = client.get("/api/ps").json()["models"]
        assert running["name"] == "tiny:latest" and running["context_length"] == 512


def test_the_daemon_sizes_an_unasked_context_to_what_fits_and_says_so(tmp_path, long_model):
    settings = app_settings(tmp_path, {"tiny": long_model}, num_ctx=0)
    probe = Probe(64 * GIB)
    app = create_app(settings, memory_probe=probe, gpu_probe=list)
    target = app.state.inference.resolve("tiny").target
    # past 8,192 tokens: below, a CPU runs small heads without flash attention (more memory)
    free = (ram(target, 16384, 1) + ram(target, 32768, 1)) / 2
    probe.available = int(free / HEADROOM) + 1
    body = {"model": "tiny", "prompt": "Hi", "stream": False, "options": {"num_predict": 2}}
    with app_client(app) as client:
        assert client.post("/api/generate", json=body).status_code == 200
        [running] = client.get("/api/ps").json()["models"]
        chosen = running["context_length"]
        assert 16384 <= chosen < 32768
        assert ram(target, chosen, 1) <= free < ram(target, chosen + 256, 1)
        shown = client.post("/api/show", json={"model": "tiny"}).json()["runs_with"]
        said = f"the largest context that fits: {chosen:,} tokens (1 slot, {size_text(free)} free)"
        assert shown["context_reason"] == f"loaded: {said}"
        assert running["context_reason"] == said  # ps says so too
