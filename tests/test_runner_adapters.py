"""LoRA adapters in the real runner: llama.cpp applies them, at the scale the spec names."""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import LoraAdapter, RunnerError
from tests.support.model_writers.lora import write_tiny_lora
from tests.support.runner import collect, make_spec

PROMPT = "<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def lora(tmp_path_factory, tiny_model_path):
    return write_tiny_lora(tmp_path_factory.mktemp("lora") / "lora.gguf", tiny_model_path)


def greedy_ids(harness, spec) -> list[int]:
    runner = harness.start(spec)
    try:
        stream = harness.run(collect(runner, PROMPT))
    finally:
        harness.run(runner.stop())
    assert stream.done is not None and stream.done.completion_tokens == 24
    return stream.token_ids


def test_an_adapter_changes_greedy_output_and_scale_zero_gives_the_base_output(
    harness, tiny_model_path, lora
):
    base = greedy_ids(harness, make_spec(tiny_model_path))
    adapted = greedy_ids(harness, make_spec(tiny_model_path, adapters=(LoraAdapter(str(lora)),)))
    half = greedy_ids(harness, make_spec(tiny_model_path, adapters=(LoraAdapter(str(lora), 0.5),)))
    off = greedy_ids(harness, make_spec(tiny_model_path, adapters=(LoraAdapter(str(lora), 0.0),)))
    assert adapted != base and half not in (base, adapted)
    assert off == base


def test_an_adapter_for_another_architecture_fails_the_load_naming_the_adapter(
    harness, tiny_model_path, tmp_path
):
    other = write_tiny_lora(tmp_path / "qwen-lora.gguf", tiny_model_path, architecture="qwen2")
    with pytest.raises(RunnerError, match=r"rejected the LoRA adapter qwen-lora\.gguf") as caught:
        harness.start(make_spec(tiny_model_path, adapters=(LoraAdapter(str(other)),)))
    assert str(tmp_path) not in str(caught.value).split("\n")[0]
