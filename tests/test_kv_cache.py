"""KV cache types and flash attention: each type loads and answers in the real runner, the
daemon passes them from options, Modelfiles and settings, reports them in ``ps``, and refuses
what llama.cpp cannot run with a clear 400."""

from __future__ import annotations

import httpx
import pytest

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.runners.attention import (
    LONG_CONTEXT,
    MOST_SCORE_BYTES,
    flash_attention_setting,
)
from localllm.daemon.scheduler.memory import ModelFootprint, footprint_shape
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings
from localllm.daemon.settings import Settings
from localllm.model_registry.importer import ModelExtras
from localllm.model_registry.model_shape import read_model_shape
from tests.support.daemon import Daemon, make_store
from tests.support.runner import GREEDY, collect, make_spec, write_tiny_model

PROMPT = "<|im_start|>user\nhello there<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    """Heads of 32 values, so q4_0/q8_0 blocks (32 values each) tile a head exactly."""
    return write_tiny_model(tmp_path_factory.mktemp("kv") / "kv.gguf", n_head=2, seed=7)


@pytest.mark.parametrize("kv_type", ["f16", "q8_0", "q4_0"])
def test_each_kv_cache_type_loads_and_answers(harness, model_path, kv_type):
    flash = "auto" if kv_type == "f16" else "on"
    runner = harness.start(make_spec(model_path, kv_cache_type=kv_type, flash_attention=flash))
    try:
        stream = harness.run(collect(runner, PROMPT))
        assert stream.done.completion_tokens == GREEDY.max_tokens
        assert stream.text
    finally:
        harness.run(runner.stop())


def test_a_quantized_cache_shrinks_the_plan_by_its_blocks_bytes(model_path):
    """The cache type a spec asks for reaches the plan made from the model's own header: a
    q8_0 cache is 34/64 of the f16 one and q4_0 18/64 (ggml's blocks of 32 values in 34 and 18
    bytes), and the load shrinks by exactly the difference (flash attention on for all three,
    so the compute buffer is the same)."""
    shape = read_model_shape(model_path)

    def plan(kind: str):
        spec = make_spec(model_path, num_ctx=8192, kv_cache_type=kind, flash_attention="on")
        return plan_memory(shape, plan_settings(spec, shape))

    f16, q8, q4 = plan("f16"), plan("q8_0"), plan("q4_0")
    assert f16.kind_bytes("kv") > 0
    assert q8.kind_bytes("kv") == f16.kind_bytes("kv") * 34 / 64
    assert q4.kind_bytes("kv") == f16.kind_bytes("kv") * 18 / 64
    assert f16.total() - q8.total() == f16.kind_bytes("kv") - q8.kind_bytes("kv")
    assert q4.total() < q8.total() < f16.total()


def test_quantized_cache_turns_flash_attention_on_or_is_refused():
    settings = Settings()
    auto = runner_options(merge_options({"kv_cache_type": "q8_0"}), settings)
    assert (auto.kv_cache_type, auto.flash_attention) == ("q8_0", "on")
    with pytest.raises(BadRequestError, match="needs flash attention"):
        runner_options(merge_options({"kv_cache_type": "q4_0", "flash_attention": "off"}), settings)
    plain = runner_options(merge_options({}), Settings(kv_cache_type="q4_0"))
    assert plain.kv_cache_type == "q4_0" and plain.flash_attention == "on"


def test_settings_read_the_cache_type_and_refuse_unknown_ones():
    env = {"LOCALLLM_KV_CACHE_TYPE": "Q8_0", "LOCALLLM_FLASH_ATTENTION": "on"}
    settings = Settings.from_env(env)
    assert (settings.kv_cache_type, settings.flash_attention) == ("q8_0", "on")
    with pytest.raises(ValueError, match="LOCALLLM_KV_CACHE_TYPE must be one of f16, q8_0, q4_0"):
        Settings.from_env({"LOCALLLM_KV_CACHE_TYPE": "q5_1"})


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, model_path):
    root = tmp_path_factory.mktemp("kv-daemon")
    extras = ModelExtras(parameters={"kv_cache_type": "q8_0"})
    store = make_store(root / "store", {"plain": model_path, "quant": (model_path, extras)})
    with Daemon(store, root / "logs", env={"LOCALLLM_NUM_PARALLEL": "1"}) as running:
        yield running


def _generate(daemon, model: str, **options) -> httpx.Response:
    body = {"model": model, "prompt": "hello", "stream": False, "options": options}
    body["options"].setdefault("num_predict", 4)
    return httpx.post(f"{daemon.url}/api/generate", json=body, timeout=120)


def test_modelfile_and_request_options_reach_the_runner_and_ps(daemon):
    assert _generate(daemon, "quant").status_code == 200
    assert _generate(daemon, "plain", kv_cache_type="q4_0").status_code == 200
    running = httpx.get(f"{daemon.url}/api/ps", timeout=30).json()["models"]
    seen = {m["name"]: (m["kv_cache_type"], m["flash_attention"]) for m in running}
    assert seen == {"quant:latest": ("q8_0", "on"), "plain:latest": ("q4_0", "on")}
    assert _generate(daemon, "plain").status_code == 200  # f16, auto: decided for its heads
    running = httpx.get(f"{daemon.url}/api/ps", timeout=30).json()["models"]
    plain = next(m for m in running if m["name"] == "plain:latest")
    assert (plain["kv_cache_type"], plain["flash_attention"]) == ("f16", "off")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kv_cache_type": "q5_1"}, "kv_cache_type must be one of f16, q8_0, q4_0"),
        ({"flash_attention": "maybe"}, "flash_attention must be one of auto, on, off"),
        ({"kv_cache_type": "q8_0", "flash_attention": "off"}, "needs flash attention"),
    ],
)
def test_invalid_cache_options_are_a_clear_400(daemon, options, message):
    response = _generate(daemon, "plain", **options)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_the_head_size_of_the_gguf_sizes_the_cache():
    """Gemma 3 and Qwen 3 have heads wider than n_embd / n_head: the plan's cache follows the
    GGUF's ``attention.key_length``, from the header and from the store's summary alike (the
    summary stands in where the file cannot be read)."""
    from localllm.daemon.inference.resolve import _footprint
    from localllm.model_registry.gguf_info import read_gguf_info
    from tests.support.real_model import gemma_path

    info = read_gguf_info(gemma_path())
    assert (info.embedding_length, info.head_count, info.key_length) == (640, 4, 256)
    header = read_model_shape(gemma_path())
    summary = footprint_shape(_footprint(1, info.to_summary()))
    for shape in (header, summary):
        assert shape.kv_widths(0) == (256 * info.head_count_kv,) * 2  # not 640 / 4 = 160
    plain = footprint_shape(ModelFootprint(1, n_layer=2, n_embd=64, n_head=4, n_head_kv=2))
    assert plain.kv_widths(0) == (32, 32)


def _setting(requested="auto", head_size=64, n_head=32, n_ctx=4096, kv="f16", on_gpu=False):
    return flash_attention_setting(
        requested,
        head_size=head_size,
        n_head=n_head,
        n_ctx=n_ctx,
        n_batch=512,
        kv_cache_type=kv,
        on_gpu=on_gpu,
    )


def test_auto_flash_attention_is_off_for_small_heads_on_a_cpu():
    """llama.cpp's CPU kernel is slow for heads of 64 values or fewer (bench/RESULTS.md)."""
    assert _setting() == "off"  # Llama 3.2 1B's shape, 4096 tokens: 256 MiB of scores
    assert _setting(head_size=128) == "auto"  # llama.cpp decides (on, on a CPU)
    assert _setting(on_gpu=True) == "auto"
    assert _setting(kv="q8_0") == "auto"  # a quantized V cache needs it
    assert _setting(n_ctx=8192) == "auto"  # the scores would take 512 MiB
    assert MOST_SCORE_BYTES == 4 * 32 * 4096 * 512
    assert _setting(n_head=4, n_ctx=LONG_CONTEXT) == "off"
    # past it, a context for long prompts: read 1.5x faster with it, as llama-server runs
    assert _setting(n_head=4, n_ctx=LONG_CONTEXT + 256) == "auto"  # scores would fit
    assert _setting("on") == "on" and _setting("off", head_size=256) == "off"


def test_the_plan_counts_the_scores_kept_without_flash_attention():
    """The memory plan decides ``auto`` as the runner does, and without flash attention its
    compute buffer holds a layer's scores: a float per head, batch token and cell (it was a
    term of its own in the old estimate; now the compute buffer's, ``compute_buffer``)."""
    from localllm.daemon.scheduler.memory import footprint_shape
    from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings

    small = footprint_shape(ModelFootprint(1 << 30, n_layer=16, n_embd=2048, n_head=32))
    wide = footprint_shape(ModelFootprint(1 << 30, n_layer=16, n_embd=4096, n_head=32))
    scores = 32 * 2048 * 512 * 4  # heads x cells x batch tokens x f32

    def compute(shape, **spec) -> tuple[bool, int]:
        spec = make_spec("m.gguf", **({"num_ctx": 2048, "num_batch": 512} | spec))
        plan = plan_memory(shape, plan_settings(spec, shape))
        return plan.settings.flash_attention, plan.kind_bytes("compute")

    flash_small, off_small = compute(small, num_parallel=1)
    assert not flash_small and off_small > scores  # small heads: auto means off
    assert compute(wide, num_parallel=1)[0]  # llama.cpp's auto: on
    flash_forced, off_wide = compute(wide, num_parallel=1, flash_attention="off")
    assert not flash_forced and off_wide > scores
    on_wide = compute(wide, num_parallel=1)[1]
    assert off_wide - on_wide > scores  # the scores, and a wider (f32) mask
    assert compute(small, num_parallel=1, kv_cache_type="q8_0")[0]  # a quantized V needs it


def test_the_runner_decides_auto_by_its_models_heads(harness, model_path, tmp_path):
    """Heads of 32 values run without flash attention under ``auto``; heads of 128 leave it
    to llama.cpp; what was asked explicitly is what runs. Each answers."""
    wide = write_tiny_model(tmp_path / "wide.gguf", n_embd=256, n_head=2, seed=7)
    cases = [(model_path, "auto", "off"), (wide, "auto", "auto"), (model_path, "on", "on")]
    for path, asked, runs in cases:
        runner = harness.start(make_spec(path, flash_attention=asked))
        try:
            assert runner.info.flash_attention == runs
            assert harness.run(collect(runner, PROMPT)).done.completion_tokens == GREEDY.max_tokens
        finally:
            harness.run(runner.stop())
