"""A MoE model's experts kept in RAM (llama-server's ``--n-cpu-moe``): ``num_cpu_moe`` reaches
llama.cpp as tensor buffer-type overrides for the experts of the first layers, the runner says
how many layers' experts stayed in RAM, and ``ps`` shows it. On this CPU build the override
changes where nothing goes, so the text is the same, and one code path serves every build."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from localllm.daemon.runners.worker.expert_placement import expert_pattern
from localllm.daemon.scheduler.placement import describe_placement
from tests.support.daemon import Daemon, make_store
from tests.support.polling import wait_for
from tests.support.runner import GREEDY, Harness, collect, make_spec, write_tiny_model

OVERRIDDEN = re.compile(r"tensor (blk\.(\d+)\.ffn_\w+_exps\.weight) .* buffer type overridden to")


def test_the_pattern_names_llama_cpps_expert_tensors_of_one_layer_or_all():
    names = ["blk.1.ffn_up_exps.weight", "blk.1.ffn_gate_up_exps.weight", "blk.12.ffn_down_exps"]
    assert [bool(re.search(expert_pattern(1), n)) for n in names] == [True, True, False]
    assert all(re.search(expert_pattern(None), n) for n in names)
    assert not re.search(expert_pattern(None), "blk.1.ffn_up.weight")  # a dense FFN
    assert not re.search(expert_pattern(None), "blk.1.ffn_gate_inp.weight")  # the router


def test_ps_says_which_experts_stay_on_the_cpu():
    kept = describe_placement(49, 49, "cuda", (12, 48))
    assert kept == "100% GPU, experts of 12/48 layers on CPU"
    assert describe_placement(49, 49, "cuda", (0, 48)) == "100% GPU"
    assert describe_placement(0, 49, "cpu", (48, 48)) == "100% CPU"  # nothing else on a GPU


@pytest.fixture(scope="module")
def harness():
    h = Harness()
    yield h
    h.close()


@pytest.fixture(scope="module")
def moe(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("moe")
    path = folder / "moe.gguf"
    return write_tiny_model(path, n_layer=3, n_expert=8, n_expert_used=2, file_type="Q8_0")


def overridden(harness: Harness, log: Path, expected: int) -> set[int]:
    """The layers whose expert tensors llama.cpp moved, once ``expected`` tensors are logged
    (the log is pumped on the harness's loop: the wait runs beside it)."""

    def found() -> list[re.Match]:
        return list(OVERRIDDEN.finditer(log.read_text())) if log.exists() else []

    assert harness.run(asyncio.to_thread(wait_for, lambda: len(found()) >= expected))
    return {int(match[2]) for match in found()}


@pytest.mark.parametrize(("wanted", "layers"), [(2, {0, 1}), (-1, {0, 1, 2})])
def test_the_experts_of_the_first_layers_stay_in_ram(harness, moe, tmp_path, wanted, layers):
    spec = replace(make_spec(moe, num_ctx=256, num_parallel=1), num_cpu_moe=wanted)
    log = tmp_path / "runner.log"
    runner = harness.start(spec, log_path=log, verbose=True)
    assert overridden(harness, log, 3 * len(layers)) == layers  # gate, up and down each
    assert (runner.info.expert_layers, runner.info.cpu_expert_layers) == (3, len(layers))
    plain = harness.start(make_spec(moe, num_ctx=256, num_parallel=1))
    assert (plain.info.expert_layers, plain.info.cpu_expert_layers) == (3, 0)
    params = replace(GREEDY, max_tokens=12)
    moved, kept = (harness.run(collect(r, "Hello world", params)) for r in (runner, plain))
    assert moved.token_ids == kept.token_ids


def test_a_dense_model_has_no_experts_to_keep(harness, tiny_q8_model_path):
    runner = harness.start(replace(make_spec(tiny_q8_model_path), num_cpu_moe=4))
    assert (runner.info.expert_layers, runner.info.cpu_expert_layers) == (0, 0)


@pytest.mark.slow
def test_num_cpu_moe_is_an_option_and_ps_reports_it(moe, tmp_path):
    with Daemon(make_store(tmp_path / "store", {"moe": moe}), tmp_path / "logs") as daemon:
        body = {"model": "moe", "prompt": "Hi", "stream": False}
        body["options"] = {"num_cpu_moe": 1, "num_predict": 2}
        assert httpx.post(daemon.url + "/api/generate", json=body, timeout=120).status_code == 200
        [loaded] = httpx.get(daemon.url + "/api/ps", timeout=30).json()["models"]
        assert (loaded["expert_layers"], loaded["cpu_expert_layers"]) == (3, 1)
        assert loaded["processor"] == "100% CPU"  # nothing is on a GPU here to say it of
        bad = {**body, "options": {"num_cpu_moe": -2}}
        refused = httpx.post(daemon.url + "/api/generate", json=bad, timeout=30)
        assert refused.status_code == 400 and "num_cpu_moe" in refused.json()["error"]
