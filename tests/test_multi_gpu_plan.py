"""Several GPUs: the plan splits the offloaded layers over them as llama.cpp's default split
does (in proportion to each GPU's free memory, the output layer with the last), each layer's
cache with it and a compute buffer on each GPU with layers; placement holds each GPU's part
against that GPU; the loader plans with every GPU the probe finds; the runner numbers the
GPUs in PCI bus order, as ``nvidia-smi`` lists them. Shapes written by hand and a generated
model, so every plan comes from real figures; llama.cpp's rule is restated here on its own."""

from __future__ import annotations

import dataclasses

import pytest

from localllm.daemon.errors import InsufficientMemoryError
from localllm.daemon.runners.process import runner_process_env
from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler import LoadTarget, ModelFootprint, RunnerOptions
from localllm.daemon.scheduler.layer_devices import layer_devices
from localllm.daemon.scheduler.loader import AUTO_CPU_MOE, AUTO_GPU_LAYERS, RunnerLoader
from localllm.daemon.scheduler.memory_plan import CPU, PlanSettings, plan_memory
from localllm.daemon.scheduler.parallel import (
    DEFAULT_PARALLEL,
    KV_SHARE,
    MOST_PARALLEL,
    default_parallel,
    slots_fit,
)
from localllm.daemon.scheduler.placement import (
    VRAM_RESERVE,
    choose_placement,
    fits_gpus,
    free_vram_text,
    gpu_usable,
)
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.test_memory_plan import GEMMA
from tests.test_placement import DENSE, gpu_part
from tests.test_scheduler import Harness, run

GIB, MIB = 1 << 30, 1 << 20


def llama_cpp_devices(n_layer: int, n_gpu_layers: int, free: list[int]) -> list[str]:
    """llama.cpp's ``load_tensors``, line by line: split points from the free memory, the
    first ``n_layer + 1 - n_gpu_layers`` layers on the CPU, each other layer on the first GPU
    whose split point is above its fraction of the offloaded layers."""
    splits, running = [], 0
    for size in free:
        running += size
        splits.append(running)
    splits = [point / running for point in splits]
    i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0)
    act_gpu_layers = min(n_gpu_layers, n_layer + 1)
    devices = []
    for il in range(n_layer + 1):
        if il < i_gpu_start:
            devices.append("CPU")
            continue
        fraction = (il - i_gpu_start) / act_gpu_layers
        devices.append(f"GPU{next(i for i, point in enumerate(splits) if point > fraction)}")
    return devices


SPLITS = [[8 * GIB, 8 * GIB], [24 * GIB, 8 * GIB], [3 * GIB, 21 * GIB], [10, 20, 30]]


@pytest.mark.parametrize("free", SPLITS)
@pytest.mark.parametrize("n_layer", [8, 24, 48])
def test_layers_are_split_by_llama_cpps_rule(free, n_layer):
    for n_gpu_layers in sorted({1, 2, 3, n_layer // 2, n_layer - 1, n_layer, n_layer + 1}):
        expected = llama_cpp_devices(n_layer, n_gpu_layers, free)
        assert layer_devices(n_layer, n_gpu_layers, tuple(free)) == expected, n_gpu_layers
    assert layer_devices(n_layer, -1, tuple(free)) == llama_cpp_devices(n_layer, n_layer + 1, free)


def test_two_equal_gpus_take_half_the_layers_each_the_output_with_the_last():
    """24 layers and the output layer: fractions 0/25..12/25 are under 0.5 (GPU0), the rest
    GPU1; one GPU layer is the output layer alone, on the first GPU."""
    devices = layer_devices(24, -1, (8 * GIB, 8 * GIB))
    assert devices == ["GPU0"] * 13 + ["GPU1"] * 12
    assert layer_devices(24, 1, (8 * GIB, 8 * GIB)) == [CPU] * 24 + ["GPU0"]
    assert layer_devices(24, 25, ()) == layer_devices(24, 25, (8 * GIB,)) == ["GPU0"] * 25


def settings(free: tuple[int, ...], gpu_layers: int = -1) -> PlanSettings:
    return PlanSettings(4096, 4, gpu_layers=gpu_layers, gpu_split=free)


@pytest.mark.parametrize("free", [(8 * GIB, 8 * GIB), (24 * GIB, 8 * GIB), (GIB, 2 * GIB, GIB)])
@pytest.mark.parametrize("gpu_layers", [1, 2, 17, 30, 48, 49])
def test_each_gpu_holds_its_layers_weights_and_caches(free, gpu_layers):
    expected = llama_cpp_devices(48, gpu_layers, list(free))
    plan = plan_memory(DENSE, settings(free, gpu_layers))
    on_cpu = plan_memory(DENSE, settings((), 0))
    kv_per_layer = on_cpu.kind_bytes("kv") // 48
    layer_bytes = DENSE.layer_bytes()
    for gpu in sorted(set(expected) - {CPU}):
        layers = [i for i in range(48) if expected[i] == gpu]
        output = DENSE.bytes_of("output") if expected[48] == gpu else 0
        assert plan.kind_bytes("weights", gpu) == sum(layer_bytes[i] for i in layers) + output
        assert plan.kind_bytes("kv", gpu) == kv_per_layer * len(layers)
        assert plan.kind_bytes("compute", gpu) > 0  # every GPU with a layer computes
    assert set(plan.gpu_bytes()) == set(expected) - {CPU}
    assert plan.kind_bytes("kv") == on_cpu.kind_bytes("kv")  # moved, not made
    assert plan.vram_bytes == sum(plan.gpu_bytes().values())
    assert plan.vram_bytes + plan.ram_bytes == plan.total()


def test_window_caches_and_a_tied_output_follow_their_layers():
    """Gemma 3 on two GPUs: each GPU's full and window caches are its layers'; the output's
    copy of the tied embeddings is on the last GPU with the output layer."""
    free = (8 * GIB, 8 * GIB)
    expected = llama_cpp_devices(18, 19, list(free))
    plan = plan_memory(GEMMA, settings(free))
    alone = plan_memory(GEMMA, settings(()))
    full = alone.kind_bytes("kv") // 3  # layers 5, 11, 17
    window = alone.kind_bytes("window kv") // 15
    for gpu in ("GPU0", "GPU1"):
        layers = [i for i in range(18) if expected[i] == gpu]
        assert plan.kind_bytes("kv", gpu) == full * sum(not GEMMA.is_swa(i) for i in layers)
        assert plan.kind_bytes("window kv", gpu) == window * sum(GEMMA.is_swa(i) for i in layers)
    tied = GEMMA.bytes_of("embeddings")
    gpu1 = sum(GEMMA.layer_bytes()[i] for i in range(18) if expected[i] == "GPU1")
    assert expected[18] == "GPU1" and plan.kind_bytes("weights", "GPU1") == gpu1 + tied
    # the logits are the last GPU's: its compute buffer holds them
    assert plan.kind_bytes("compute", "GPU1") > 512 * MIB > plan.kind_bytes("compute", "GPU0")


def test_one_gpu_plans_as_before():
    for layers in (0, 1, 20, 49):
        before = plan_memory(DENSE, PlanSettings(4096, 4, gpu_layers=layers))
        assert plan_memory(DENSE, settings((8 * GIB,), layers)).parts == before.parts
        assert before.devices() == ([CPU, "GPU0"] if layers else [CPU])


def plan_for(free: list[int]):
    def plan(layers: int, cpu_moe: int):
        return plan_memory(DENSE, PlanSettings(4096, 4, gpu_layers=layers, gpu_split=tuple(free)))

    return plan


def test_a_model_too_big_for_one_gpu_gets_every_layer_on_two():
    """About 12 GiB on the GPUs: more than one 8 GiB card holds, less than two."""
    two = [8 * GIB, 8 * GIB]
    placement = choose_placement(DENSE, plan_for(two), two)
    assert placement.gpu_layers == 49
    assert placement.reason == "49/49 layers fit in 2 GPUs' 16.0 GiB free VRAM"
    plan = plan_for(two)(49, 0)
    usable = gpu_usable(two)
    assert all(plan.gpu_bytes()[gpu] <= usable[gpu] for gpu in ("GPU0", "GPU1"))
    assert plan.vram_bytes > usable["GPU0"]  # one alone would not
    alone = choose_placement(DENSE, plan_for([8 * GIB]), [8 * GIB])
    assert alone.gpu_layers < 49 and alone.reason.endswith("in 8.0 GiB free VRAM")


def test_a_small_second_gpu_whose_share_overflows_limits_the_layers():
    """A 2 GiB card beside a 16 GiB one gets a ninth of the layers and the output layer:
    more than it holds, though the two together hold every layer."""
    free = [16 * GIB, 2 * GIB]
    plans = plan_for(free)
    assert plans(49, 0).vram_bytes < sum(gpu_usable(free).values())
    placement = choose_placement(DENSE, plans, free)
    layers = placement.gpu_layers
    assert 0 < layers < 49
    assert fits_gpus(plans(layers, 0), free) and not fits_gpus(plans(layers + 1, 0), free)
    over = plans(layers + 1, 0).gpu_bytes()
    assert over["GPU0"] <= gpu_usable(free)["GPU0"]  # the small one is what overflows
    assert placement.reason == f"{layers}/49 layers fit in 2 GPUs' 18.0 GiB free VRAM"


@pytest.fixture(scope="module")
def dense(tmp_path_factory) -> LoadTarget:
    path = write_tiny_model(tmp_path_factory.mktemp("dense") / "d.gguf", n_layer=8, n_embd=256)
    return LoadTarget("dense", (str(path),), ModelFootprint(path.stat().st_size, 8, 256, 4, 4))


def two_cards(target: LoadTarget) -> list[int]:
    """Two equal GPUs, each with room for three quarters of the whole model's GPU part."""
    return [VRAM_RESERVE + gpu_part(target, 9) * 3 // 4] * 2


def test_the_loader_plans_every_layer_over_two_gpus(dense):
    free = two_cards(dense)
    loader = RunnerLoader(None, lambda: list(free))
    spec = RunnerSpec(
        "dense",
        dense.model_paths,
        num_ctx=512,
        num_parallel=2,
        num_gpu_layers=AUTO_GPU_LAYERS,
        num_cpu_moe=AUTO_CPU_MOE,
    )
    plan = run(loader.plan(dense, spec, free_ram=64 * GIB))
    assert plan.spec.num_gpu_layers == 9
    assert plan.memory.devices() == [CPU, "GPU0", "GPU1"]
    assert plan.memory.settings.gpu_split == tuple(free)
    assert plan.placement.reason == f"9/9 layers fit in {free_vram_text(sum(free), 2)}"
    assert plan.placement.reason.startswith("9/9 layers fit in 2 GPUs' ")
    usable = gpu_usable(free)
    assert plan.gpu_free == (usable["GPU0"], usable["GPU1"])
    assert plan.vram_free == sum(usable.values())
    for gpu, size in plan.memory.gpu_bytes().items():
        assert 0 < size <= plan.free_on(gpu)
        assert plan.memory.kind_bytes("kv", gpu) and plan.memory.kind_bytes("compute", gpu)
    assert plan.fits
    one = run(RunnerLoader(None, lambda: free[:1]).plan(dense, spec, free_ram=64 * GIB))
    assert one.spec.num_gpu_layers < 9 and one.memory.devices() == [CPU, "GPU0"]


def test_slots_and_context_are_sized_to_each_gpu(dense):
    """Left to the daemon, the slots and the context are sized so each GPU's part fits that
    GPU; the reasons name the GPUs' free VRAM together."""
    free = [VRAM_RESERVE + 200 * MIB] * 2
    trained = dataclasses.replace(dense, n_ctx_train=131_072)
    spec = RunnerSpec(
        "dense",
        dense.model_paths,
        num_ctx=0,
        num_parallel=0,
        num_gpu_layers=AUTO_GPU_LAYERS,
        num_cpu_moe=AUTO_CPU_MOE,
    )
    plan = run(RunnerLoader(None, lambda: list(free)).plan(trained, spec, 64 * GIB))
    assert plan.spec.num_gpu_layers == 9 and plan.fits
    assert plan.context_reason.startswith("the largest context that fits: ")
    assert plan.context_reason.endswith(", 0.4 GiB free VRAM of 2 GPUs)")
    assert plan.parallel_reason == "the default of 4: 2 GPUs' 0.4 GiB free VRAM holds no more"


def test_each_gpus_caches_are_held_against_what_its_other_parts_leave_of_it():
    def plans(slots: int):
        return plan_memory(DENSE, PlanSettings(8192, slots, gpu_layers=-1, gpu_split=split))

    split = (40 * GIB, 40 * GIB)
    usable = gpu_usable(split)
    slots = default_parallel(plans, 8192, usable).num_parallel

    def fits(plan) -> bool:
        for gpu, size in plan.gpu_bytes().items():
            cache = plan.kind_bytes("kv", gpu)
            if cache > (usable[gpu] - (size - cache)) * KV_SHARE:
                return False
        return True

    assert slots > DEFAULT_PARALLEL and fits(plans(slots))
    assert slots == MOST_PARALLEL or not fits(plans(2 * slots))
    assert slots_fit(plans(slots), usable) and not slots_fit(plans(slots), {"GPU0": 80 * GIB})


def test_layers_asked_for_that_a_small_second_gpu_cannot_hold_are_refused_naming_it(dense):
    whole = gpu_part(dense, 9)
    free = [VRAM_RESERVE + whole * 2, VRAM_RESERVE + whole // 8]
    h = Harness(gpu_backend=True, free_vram=free)
    options = RunnerOptions(num_ctx=512, num_parallel=2, num_gpu=-1)
    with pytest.raises(InsufficientMemoryError) as caught:
        run(h.scheduler.acquire(dense, options))
    message = str(caught.value)
    assert "(9/9 layers on 2 GPUs, on GPU1: weights " in message, message
    assert caught.value.available == gpu_usable(free)["GPU1"] < caught.value.needed
    placed = run(h.scheduler.plan(dense, RunnerOptions(num_ctx=512, num_parallel=2)))
    assert 0 < placed.spec.num_gpu_layers < 9 and placed.fits


def test_the_runner_numbers_the_gpus_in_pci_bus_order(monkeypatch):
    env = runner_process_env({"PATH": "/usr/bin"})
    assert env == {"PATH": "/usr/bin", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    asked = runner_process_env({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})
    assert asked == {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}  # the user's choice kept
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    monkeypatch.setenv("LOCALLLM_TEST_INHERITED", "1")
    inherited = runner_process_env(None)  # None: this process's environment
    assert inherited["LOCALLLM_TEST_INHERITED"] == "1"
    assert inherited["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
