"""``localllm show MODEL --plan``: the daemon's memory plan as a table of parts, the totals per
device against free memory, whether it fits and why; ``--ctx``, ``--parallel`` and
``--kv-cache-type`` reach the daemon as a chat's options would."""

from __future__ import annotations

import json

import pytest

from localllm.daemon.api import PlanDevice, PlanPartOut
from tests.support.cli import PLAN

MIB = 1 << 20


def test_the_plan_as_a_table_with_the_daemons_reasons(run_cli, fake):
    status, out, err = run_cli("show", "tiny", "--plan")
    assert (status, err) == (0, "")
    assert fake.calls == [("plan", "tiny", {})]
    assert "    runs at       4,096 tokens x 4 slots\n" in out
    assert "    because       the largest context that fits: 4,096 tokens (4 slots" in out
    assert "    kv cache      f16, flash attention on\n" in out
    assert "    gpu layers    0/19 (no GPU found)\n" in out
    lines = out.splitlines()
    header = lines.index("    PART          WHERE    SIZE      WHAT")
    assert lines[header + 1].split() == ["weights", "RAM", "260", "MB", "weights,", "mapped"]
    assert lines[header + 3].endswith("graph (measured)")
    assert lines[header + 4].split()[:4] == ["host", "cache", "RAM", "1.1"]
    assert lines[header + 4].endswith("prompts (later)")
    totals = lines.index("    WHERE    AT LOAD    LATER     FREE")
    assert lines[totals + 1].split() == ["RAM", "899", "MB", "1.1", "GB", "6.9", "GB"]
    assert "  Fits\n    it needs 858 MiB of RAM, 6.4 GiB free\n" in out


def test_the_settings_to_plan_go_as_options(run_cli, fake):
    status, _, _ = run_cli(
        "show", "tiny", "--plan", "--ctx", "32768", "--parallel", "2", "--kv-cache-type", "q8_0"
    )
    assert status == 0
    assert fake.calls == [
        ("plan", "tiny", {"num_ctx": 32768, "num_parallel": 2, "kv_cache_type": "q8_0"})
    ]


def test_a_plan_that_does_not_fit_says_so_and_what_would(run_cli, fake):
    fake.plan_info = PLAN.model_copy(
        update={"fits": False, "fit_reason": "it needs 9.1 GiB; it fits at 8,192 tokens a slot"}
    )
    status, out, _ = run_cli("show", "tiny", "--plan")
    assert status == 0
    assert "  Does not fit\n    it needs 9.1 GiB; it fits at 8,192 tokens a slot\n" in out


def test_a_gpu_and_a_mixture_of_experts_show_where_each_part_goes(run_cli, fake):
    parts = [
        PlanPartOut(kind="weights", device="GPU0", bytes=2000 * MIB, text="copied to the GPU"),
        PlanPartOut(kind="experts", device="CPU", bytes=9000 * MIB, text="the experts' weights"),
    ]
    devices = [
        PlanDevice(device="CPU", bytes=9000 * MIB, free=12000 * MIB),
        PlanDevice(device="GPU0", bytes=2000 * MIB, free=7000 * MIB),
    ]
    settings = PLAN.settings.model_copy(
        update={"gpu_layers": 49, "total_layers": 49, "cpu_moe_layers": 30}
    )
    fake.plan_info = PLAN.model_copy(
        update={"parts": parts, "devices": devices, "settings": settings}
    )
    _, out, _ = run_cli("show", "tiny", "--plan")
    assert "    experts in RAM    30/48 layers\n" in out
    assert "    experts    RAM      9.4 GB    the experts' weights\n" in out
    assert "    weights    GPU 0    2.1 GB    copied to the GPU\n" in out
    assert "    GPU 0    2.1 GB     -        7.3 GB\n" in out


def test_json_is_the_daemons_own_fields(run_cli):
    status, out, _ = run_cli("show", "tiny", "--plan", "--json")
    assert status == 0
    assert json.loads(out) == PLAN.model_dump(mode="json")


def test_plan_settings_without_plan_are_a_usage_error(run_cli, fake):
    status, out, err = run_cli("show", "tiny", "--ctx", "8192")
    assert (status, out) == (2, "")
    assert err == "Error: --ctx set what --plan plans: add --plan\n"
    assert fake.calls == []
    with pytest.raises(SystemExit) as caught:
        run_cli("show", "tiny", "--plan", "--template")
    assert caught.value.code == 2
    with pytest.raises(SystemExit):
        run_cli("show", "tiny", "--plan", "--ctx", "0")


def test_a_model_not_installed_is_one_line(run_cli, fake):
    fake.missing = {"nope"}
    assert run_cli("show", "nope", "--plan") == (1, "", "Error: model 'nope' not found\n")
