"""The daemon's memory plan in the app's state layer (no widgets): bars per device, the words
beside them, the fit badges and first-run suggestions that follow the plan rather than the file
size, the tables' figures ("about" until the plan comes), and a chat refused for memory that
offers Load anyway."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt

from localllm.app.gui.item_models.daemon_tables import (
    CatalogTableModel,
    HubFilesModel,
    InstalledModelsModel,
)
from localllm.app.gui.item_models.table import TONE_ROLE
from localllm.app.gui.state.chat.errors import LOAD_ANYWAY_HINT, explain, memory_refused
from localllm.app.gui.state.fit import Fit, fit_for, needed_memory, plan_fit
from localllm.app.gui.state.gateway import Gateway, GatewayError
from localllm.app.gui.state.model_plan import bar_rows, memory_text, plan_lines, plan_tip
from localllm.app.gui.state.records import (
    CatalogModel,
    GpuInfo,
    HubFile,
    InstalledModel,
    ModelPlan,
    PlanDevice,
    PlanPart,
    SystemInfo,
)
from localllm.app.gui.state.starter_models import STARTERS, suggest
from localllm.app.gui.state.units import bytes_text
from tests.support.cli import PLAN, FakeClient

MB, GB = 1_000_000, 1_000_000_000


def plan(
    *parts: PlanPart, fits: bool = True, gpu: tuple[int, int] = (0, 25), **devices
) -> ModelPlan:
    """A plan of ``parts``; ``devices``: free bytes by device ("CPU", "GPU0")."""
    at_load = {}
    for part in parts:
        if not part.later:
            at_load[part.device] = at_load.get(part.device, 0) + part.bytes
    rows = tuple(PlanDevice(d, at_load.get(d, 0), free=devices.get(d)) for d in at_load)
    return ModelPlan(
        "m",
        parts,
        rows,
        sum(at_load.values()),
        fits,
        fit_reason="it needs what it needs",
        context_length=8192,
        num_parallel=4,
        gpu_layers=gpu[0],
        total_layers=gpu[1],
    )


SPLIT = plan(
    PlanPart("weights", "CPU", 2000 * MB, "mapped"),
    PlanPart("weights", "GPU0", 3000 * MB, "copied"),
    PlanPart("kv", "GPU0", 500 * MB),
    PlanPart("window kv", "GPU0", 100 * MB),
    PlanPart("compute", "GPU0", 400 * MB),
    PlanPart("compute", "CPU", 10 * MB),
    PlanPart("output", "CPU", 2 * MB),
    PlanPart("projector", "GPU0", 800 * MB),
    PlanPart("host cache", "CPU", 1000 * MB, later=True),
    gpu=(15, 25),
    CPU=6000 * MB,
    GPU0=4000 * MB,
)


def test_a_bar_per_device_with_its_parts_grouped_in_order():
    ram, gpu = bar_rows(SPLIT)
    assert ram.device == "RAM" and gpu.device == "GPU 0"
    assert [(s.group, s.bytes) for s in ram.segments] == [
        ("weights", 2000 * MB),
        ("compute", 12 * MB),  # the graph's inputs and the logits
        ("prompt cache", 1000 * MB),  # may fill later, not at load
    ]
    assert [(s.group, s.bytes) for s in gpu.segments] == [
        ("weights", 3000 * MB),
        ("cache", 600 * MB),
        ("compute", 400 * MB),
        ("projector", 800 * MB),
    ]
    assert (ram.used, ram.free, ram.scale, ram.over) == (2012 * MB, 6000 * MB, 6000 * MB, False)
    assert (gpu.used, gpu.scale, gpu.over) == (4800 * MB, 4800 * MB, True)  # past the free line


def test_the_plan_in_words():
    lines = plan_lines(SPLIT)
    assert lines[0] == "8,192 tokens x 4 slots, 15 of 25 layers on the GPU, K/V cache f16"
    assert lines[1] == (
        "RAM: 2.0 GB of 6.0 GB free (weights 2.0 GB, compute 12.0 MB); "
        "up to 1.0 GB more later (prompt cache)"
    )
    assert lines[2] == (
        "GPU 0: 4.8 GB of 4.0 GB free (weights 3.0 GB, cache 600.0 MB, compute 400.0 MB, "
        "projector 800.0 MB)"
    )
    assert lines[-1] == "Fits in the memory free now."
    moe = replace(SPLIT, gpu_layers=25, cpu_moe_layers=12, fits=False, suggestion="it fits at 1")
    assert plan_lines(moe)[0] == "8,192 tokens x 4 slots, all on the GPU, K/V cache f16"
    experts = (*moe.parts, PlanPart("experts", "CPU", 9 * GB))
    assert plan_lines(replace(moe, parts=experts))[0] == (
        "8,192 tokens x 4 slots, all on the GPU, the experts of its first 12 layers in RAM, "
        "K/V cache f16"
    )
    assert plan_lines(moe)[-1] == "Does not fit in the memory free now: it fits at 1."


def test_the_badge_is_the_plans_verdict():
    assert plan_fit(None) is Fit.UNKNOWN
    assert plan_fit(replace(SPLIT, fits=False)) is Fit.TOO_LARGE
    assert plan_fit(replace(SPLIT, gpu_layers=25)) is Fit.VRAM
    assert plan_fit(SPLIT) is Fit.SPLIT and Fit.SPLIT.tone == "success"
    assert plan_fit(replace(SPLIT, gpu_layers=0)) is Fit.RAM


def test_a_figure_is_about_until_the_plan_comes():
    assert memory_text(None, 4 * GB) == f"about {bytes_text(needed_memory(4 * GB))}"
    assert memory_text(SPLIT, 4 * GB) == bytes_text(SPLIT.total)
    assert "a guess from the file size" in plan_tip(None, 4 * GB)
    assert plan_tip(SPLIT, 4 * GB) == "\n".join(plan_lines(SPLIT))


def test_the_tables_follow_the_plan_not_the_file_size(model_tester):
    machine = SystemInfo(16 * GB, 8 * GB, (GpuInfo("GPU", 8 * GB, 8 * GB),))
    files = model_tester(HubFilesModel())
    small = HubFile("m-Q4.gguf", "Q4_K_M", 4 * GB, "hf.co/o/m:Q4_K_M")
    files.replace([small])
    files.set_system(machine)
    header = [files.headerData(c, Qt.Orientation.Horizontal) for c in range(files.columnCount())]
    fits, memory = header.index("Fits"), header.index("Memory")
    assert files.index(0, fits).data() == fit_for(4 * GB, machine).label == Fit.VRAM.label
    assert files.index(0, memory).data().startswith("about ")
    too_large = plan(PlanPart("compute", "CPU", 30 * GB), fits=False)  # a 262k vocabulary...
    files.set_plan("m-Q4.gguf", too_large)
    assert files.index(0, fits).data() == Fit.TOO_LARGE.label
    assert files.index(0, fits).data(TONE_ROLE) == "warning"
    assert files.index(0, memory).data() == "30.0 GB"
    assert "Does not fit" in files.index(0, memory).data(
        Qt.ItemDataRole.ToolTipRole
    )  # the tooltip says the plan

    installed = model_tester(InstalledModelsModel())
    installed.replace([InstalledModel("m:latest", 4 * GB, None)])
    installed.set_system(machine)
    assert installed.index(0, installed.FITS).data() == Fit.VRAM.label
    installed.set_plan("m:latest", SPLIT)
    assert installed.index(0, installed.FITS).data() == Fit.SPLIT.label

    catalog = model_tester(CatalogTableModel())
    catalog.replace([CatalogModel("m:4b", "4B", 4 * GB, "", repo="o/m", quant="Q4_K_M")])
    catalog.set_system(machine)
    catalog.set_plan("m:4b", replace(SPLIT, fits=False))
    assert catalog.index(0, 3).data() == Fit.TOO_LARGE.label


def test_first_run_suggestions_follow_the_plans():
    machine = SystemInfo(16 * GB, 12 * GB)
    guessed = suggest(machine)
    assert all(s.plan is None for s in guessed)
    chosen = next(s for s in guessed if s.recommended).model
    plans = {chosen.name: replace(SPLIT, fits=False)}
    planned = suggest(machine, plans)
    assert next(s for s in planned if s.model == chosen).fit is Fit.TOO_LARGE
    assert next(s for s in planned if s.recommended).model != chosen  # another one now
    assert len(planned) == len(STARTERS)


def test_a_load_refused_for_memory_offers_load_anyway():
    refused = GatewayError("model 'm' needs 9.1 GiB of RAM but only 6.0 GiB is free", status=507)
    message, hint = explain(refused)
    assert message.startswith("model 'm' needs 9.1 GiB") and hint == LOAD_ANYWAY_HINT
    assert memory_refused(hint)
    assert not memory_refused(explain(GatewayError("boom", "Try later.", status=500))[1])


def test_the_gateway_brings_plans_as_records():
    client = FakeClient()
    gateway = Gateway(client)
    planned = gateway.plan("tiny", {"num_ctx": 4096})
    assert planned.total == PLAN.total and planned.context_length == 4096
    assert planned.parts[-1].later and planned.parts[2].measured
    assert planned.devices[0].free == PLAN.devices[0].free
    hub = gateway.hub_plan("o/m", "m-Q4_K_M.gguf", options={"num_ctx": 2048})
    assert hub.model == PLAN.model
    assert client.calls[-2:] == [
        ("plan", "tiny", {"num_ctx": 4096}),
        ("hub_plan", "o/m", "m-Q4_K_M.gguf", None, {"num_ctx": 2048}),
    ]


@pytest.mark.parametrize("free", [None, 1])
def test_a_device_without_a_free_figure_is_not_judged(free):
    [row] = bar_rows(plan(PlanPart("weights", "CPU", 2 * GB), CPU=free))
    assert row.free == free and row.scale == max(free or 0, 2 * GB)
