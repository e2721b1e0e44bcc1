"""Hostile chat templates against the real daemon over real HTTP: a runaway render neither
freezes the daemon nor takes its memory, a huge template is refused before it is parsed, and
each is a clear 400 (naming the model when the template is the model's own)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from localllm.daemon.inference.templates import ChatTemplate
from tests.support.daemon import Daemon, make_store
from tests.support.gate import Gate
from tests.support.in_process import serve_daemon_in_thread

pytestmark = pytest.mark.slow

NESTED_LOOPS = "{% for i in range(12000) %}{% for j in range(12000) %}{% endfor %}{% endfor %}"
FOREVER = (  # 2**60 macro calls: only the deadline stops it
    "{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}"
)
BLOW_UPS = {  # each builds a gigabyte or more without a budget
    "namespace doubling": "{% set ns = namespace(s='x' * 1024) %}{% for i in range(20) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    "center": "{{ 'x' | center(10**9) }}",
    "repetition": "{{ 'x' * 10**9 }}",
    "lipsum": "{{ lipsum(10**6) }}",
    "concatenation": "{% set a = 'x' * 1000000 %}{% set b = a ~ a ~ a ~ a ~ a ~ a ~ a ~ a %}"
    "{% set c = b ~ b ~ b ~ b ~ b ~ b ~ b ~ b %}{{ (c ~ c) | length }}",
    "format width": "{{ '%1000000000s' | format('x') }}",
    "indent width": "{{ 'a\\nb' | indent(10**9) }}",
}
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("security-templates")
    looper = write_tiny_model(root / "looper.gguf", seed=1, chat_template=NESTED_LOOPS)
    models = {
        "tiny": tiny_model_path,
        "looper": looper,  # the GGUF's own tokenizer.chat_template runs away
        "modelfile-looper": (tiny_model_path, ModelExtras(template=NESTED_LOOPS)),
    }
    with Daemon(make_store(root / "store", models), root / "logs") as running:
        yield running


def generate(url: str, template: str) -> httpx.Response:
    body = {"model": "tiny", "prompt": "hi", "template": template, "stream": False}
    options = {"num_predict": 1}
    return httpx.post(url + "/api/generate", json={**body, "options": options}, timeout=120)


def peak_memory(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("template", [NESTED_LOOPS, FOREVER], ids=["nested loops", "forever"])
def test_a_runaway_template_neither_freezes_the_daemon_nor_hangs(
    tmp_path, tiny_model_path, monkeypatch, template
):
    """Renders run in a thread: held at its start here, the render leaves the daemon answering
    others (on the event loop, it would hold every answer until the gate opened); let go, it
    stops itself at its budget with a 400."""
    gate = Gate()
    monkeypatch.setattr(ChatTemplate, "render", gate.wrap(ChatTemplate.render))
    store = make_store(tmp_path / "store", {"tiny": tiny_model_path})
    with serve_daemon_in_thread(tmp_path, store) as url, ThreadPoolExecutor(1) as pool:
        answer = pool.submit(generate, url, template)
        try:
            assert gate.entered.wait(120), "the template was never rendered"
            assert httpx.get(url + "/", timeout=60).status_code == 200  # while it renders
        finally:
            gate.open()
        response = answer.result()
    assert response.status_code == 400, response.text
    assert "request chat template went over its budget" in response.json()["error"]


def test_memory_blow_ups_are_400s_and_the_daemon_stays_small(daemon):
    assert generate(daemon.url, "{{ .Prompt }}").status_code == 200
    before = peak_memory(daemon.process.pid)
    for name, template in BLOW_UPS.items():
        response = generate(daemon.url, template)
        assert response.status_code == 400, (name, response.text)
        assert "went over its budget" in response.json()["error"], name
    grew = peak_memory(daemon.process.pid) - before
    assert grew < 300 << 20, f"the daemon's peak memory grew by {grew >> 20} MiB"


def test_a_huge_template_is_refused_before_it_is_parsed(daemon):
    huge = "{{ messages[0].content }}" * 115_000  # 2.8 MB: half a minute to parse
    response = generate(daemon.url, huge)  # test_template_budget: refused unparsed
    assert response.status_code == 400
    error = response.json()["error"]
    assert "2,875,000 characters" in error and "at most 262,144 (256 KiB)" in error


@pytest.mark.parametrize(
    ("model", "origin"), [("looper", "model"), ("modelfile-looper", "Modelfile")]
)
def test_a_runaway_model_template_is_an_error_naming_the_model(daemon, model, origin):
    body = {"model": model, "messages": HI, "stream": False}
    response = httpx.post(daemon.url + "/api/chat", json=body, timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error.startswith(f"model '{model}': the {origin} chat template went over its budget")
    # its million loops, or its 2 s first on a busy machine (test_template_budget: each alone)
    assert "looped more than 1,000,000 times" in error or "ran longer than 2 s" in error


def test_openai_clients_get_a_400_they_do_not_retry(daemon):
    with pytest.raises(openai.BadRequestError) as caught:
        daemon.openai().chat.completions.create(model="looper", messages=HI, max_tokens=2)
    assert caught.value.body["code"] == "template_budget_exceeded"
    assert "model 'looper'" in caught.value.body["message"]
    reply = daemon.openai().chat.completions.create(model="tiny", messages=HI, max_tokens=2)
    assert reply.choices[0].message.content is not None  # the daemon carries on
