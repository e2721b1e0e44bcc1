"""``POST /api/plan`` on the real app: an installed model's plan with a chat's options, judged
against the free memory the daemon's probe reports (set small here), and a quant on a local
Hugging Face hub planned from its header alone, read by range requests, as its download would
be planned once installed. No runner starts."""

from __future__ import annotations

import pytest

from localllm.daemon.scheduler import MemoryInfo
from localllm.daemon.server import create_app
from localllm.model_registry.model_shape import read_model_shape
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.in_process import app_client, app_settings
from tests.support.local_hub import DEFAULT_TOKEN, LocalHub
from tests.support.model_writers.gemma3 import write_tiny_gemma3
from tests.support.raw_remote import RawRemote
from tests.support.remotes import admin_headers

GIB = 1 << 30
HEADROOM = 0.20  # the scheduler's default: free memory never planned for
REPO = "org/Gemma-GGUF"
BIG = "org/Big-GGUF"


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    """A Gemma-3-like model: sliding-window layers, a 32k trained context."""
    return write_tiny_gemma3(tmp_path_factory.mktemp("plan-gemma") / "gemma.gguf")


@pytest.fixture(scope="module")
def big_vocabulary(tmp_path_factory):
    """The same with Gemma's 262k vocabulary: an 8 MB header in a 40 MB file."""
    folder = tmp_path_factory.mktemp("plan-big")
    return write_tiny_gemma3(folder / "big.gguf", vocab_size=262_144)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan-shards")
    return [write_tiny_model(folder / f"s{i}.gguf", n_embd=64, seed=20 + i) for i in range(2)]


@pytest.fixture
def hub(gemma, big_vocabulary, shards):
    with LocalHub() as hub:
        hub.add_repo(REPO, {"Gemma-F16.gguf": gemma, "README.md": b"# gemma"})
        hub.add_repo(BIG, {"Big-F16.gguf": big_vocabulary})
        hub.add_repo(
            "org/Split-GGUF",
            {f"Split-Q8_0-0000{i + 1}-of-00002.gguf": s for i, s in enumerate(shards)},
        )
        hub.add_repo("org/Gated-GGUF", {"Gated-F16.gguf": gemma}, gated=True)
        yield hub


class Machine:
    """The daemon's memory probe, as small as a test makes it; and its runner factory, which
    a plan must never call."""

    def __init__(self, available: int = 8 * GIB):
        self.available = available
        self.runners_started = 0

    def memory(self) -> MemoryInfo:
        return MemoryInfo(16 * GIB, self.available)

    async def start_runner(self, spec, log_path):
        self.runners_started += 1
        raise AssertionError("a plan started a runner")


@pytest.fixture
def machine():
    return Machine()


@pytest.fixture
def daemon(tmp_path, gemma, big_vocabulary, hub, machine):
    settings = app_settings(
        tmp_path,
        {"gemma": gemma, "big": big_vocabulary},
        num_ctx=0,
        num_parallel=0,
        hf_endpoint=hub.endpoint,
        hf_token=DEFAULT_TOKEN,
    )
    app = create_app(
        settings,
        memory_probe=machine.memory,
        gpu_probe=lambda: [],
        runner_factory=machine.start_runner,
        admin_token="test-admin-token",
    )
    with app_client(app, "127.0.0.1") as client:
        yield client
    assert machine.runners_started == 0


def plan(daemon, **body):
    answer = daemon.post("/api/plan", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_an_installed_models_plan_with_a_chats_options(daemon):
    options = {"num_ctx": 4096, "num_parallel": 2}
    planned = plan(daemon, model="gemma", options=options)
    s = planned["settings"]
    assert (s["context_length"], s["num_parallel"]) == (4096, 2)
    assert s["context_reason"] == "the request's num_ctx"
    assert s["parallel_reason"] == "the request's num_parallel"
    assert (s["gpu_layers"], s["placement_reason"]) == (0, "no GPU found")
    kinds = {p["kind"] for p in planned["parts"]}
    assert {"weights", "kv", "window kv", "output", "compute"} <= kinds
    assert all(p["device"] == "CPU" for p in planned["parts"])
    [ram] = planned["devices"]
    at_load = sum(p["bytes"] for p in planned["parts"] if not p["later"])
    assert ram["bytes"] == planned["total"] == at_load
    assert ram["later_bytes"] == sum(p["bytes"] for p in planned["parts"] if p["later"])
    assert ram["free"] == int(8 * GIB * (1 - HEADROOM))
    assert planned["fits"] is True and planned["source"] == "store"
    assert planned["fit_reason"].startswith(f"it needs {ram['bytes'] / (1 << 20):,.0f} MiB of RAM")


def test_the_options_change_the_plan_as_they_change_the_load(daemon):
    f16 = plan(daemon, model="gemma", options={"num_ctx": 8192, "num_parallel": 1})
    q8 = plan(
        daemon, model="gemma", options={"num_ctx": 8192, "num_parallel": 1, "kv_cache_type": "q8_0"}
    )
    kv = {p["kind"]: p["bytes"] for p in f16["parts"]}["kv"]
    kv8 = {p["kind"]: p["bytes"] for p in q8["parts"]}["kv"]
    assert kv8 == kv * 34 // 64  # q8_0 keeps 32 values in 34 bytes, f16 in 64
    assert q8["settings"]["kv_cache_type"] == "q8_0" and q8["settings"]["flash_attention"]
    longer = plan(daemon, model="gemma", options={"num_ctx": 16384, "num_parallel": 1})
    assert {p["kind"]: p["bytes"] for p in longer["parts"]}["kv"] == 2 * kv


def test_with_little_memory_free_it_does_not_fit_and_says_what_would(daemon, machine):
    everything = plan(daemon, model="gemma", options={"num_ctx": 32768, "num_parallel": 4})
    machine.available = int(everything["total"] * 0.6 / (1 - HEADROOM))
    tight = plan(daemon, model="gemma", options={"num_ctx": 32768, "num_parallel": 4})
    assert tight["fits"] is False and tight["total"] == everything["total"]
    assert tight["devices"][0]["free"] < tight["total"]
    assert tight["suggestion"].startswith("it fits at ")
    assert " tokens a slot (num_ctx " in tight["suggestion"]
    assert tight["fit_reason"].endswith(tight["suggestion"])
    assert everything["suggestion"] == ""
    sized = plan(daemon, model="gemma", options={"num_parallel": 4})  # no num_ctx: sized to fit
    assert sized["fits"] is True
    assert 2048 < sized["settings"]["context_length"] < 32768
    assert "fits" in sized["settings"]["context_reason"]


def test_a_model_not_installed_is_a_404_and_a_remote_one_a_400(daemon):
    missing = daemon.post("/api/plan", json={"model": "nowhere"})
    assert missing.status_code == 404 and "not found" in missing.json()["error"]
    remote = RawRemote("ok")
    try:
        body = {"name": "team", "urls": [remote.url]}
        added = daemon.post("/api/remotes", json=body, headers=admin_headers("test-admin-token"))
        assert added.status_code == 200, added.text
        refused = daemon.post("/api/plan", json={"model": "team/m"})
    finally:
        remote.close()
    assert refused.status_code == 400
    assert "engine plans its own memory" in refused.json()["error"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "name an installed model"),
        ({"model": "gemma", "repo": REPO, "quant": "F16"}, "name an installed model"),
        ({"repo": REPO}, "name one of its GGUF files"),
        ({"repo": "no-slash", "quant": "F16"}, "org/name"),
    ],
)
def test_a_request_that_names_no_one_model_is_a_400(daemon, body, says):
    answer = daemon.post("/api/plan", json=body)
    assert answer.status_code == 400 and says in answer.json()["error"]


def test_a_quant_on_the_hub_is_planned_as_if_installed(daemon):
    options = {"num_ctx": 8192, "num_parallel": 2}
    installed = plan(daemon, model="gemma", options=options)
    remote = plan(daemon, repo=REPO, file="Gemma-F16.gguf", options=options)
    assert remote["source"] == "hub" and remote["model"] == f"hf.co/{REPO}:F16"
    assert remote["parts"] == installed["parts"]
    assert remote["settings"] == installed["settings"]
    assert (remote["total"], remote["fits"]) == (installed["total"], installed["fits"])


def test_only_the_header_is_read_and_only_once_per_revision(daemon, hub, big_vocabulary):
    size = big_vocabulary.stat().st_size
    installed = plan(daemon, model="big", options={"num_ctx": 4096})
    remote = plan(daemon, repo=BIG, file="Big-F16.gguf", options={"num_ctx": 4096})
    assert remote["parts"] == installed["parts"] and remote["file_size"] == size
    served, requests = hub.bytes_served(BIG, "Big-F16.gguf"), hub.blob_requests(BIG, "Big-F16.gguf")
    assert 0 < served <= 16 << 20 and served < size / 4  # its 8 MB header: 1+1+2+4 MiB
    assert requests == 4
    plan(daemon, repo=BIG, quant="F16", options={"num_ctx": 2048})
    assert hub.blob_requests(BIG, "Big-F16.gguf") == requests  # cached
    hub.add_repo(BIG, {"Big-F16.gguf": big_vocabulary, "README.md": b"# a new revision"})
    assert hub.blob_requests(BIG, "Big-F16.gguf") == 0  # the hub counts the new commit's
    plan(daemon, repo=BIG, quant="F16")
    assert hub.blob_requests(BIG, "Big-F16.gguf") == requests  # read again


def test_a_hub_plan_sizes_its_default_context_as_a_load_would(daemon, machine):
    machine.available = 40 << 20
    installed = plan(daemon, model="gemma", options={"num_parallel": 4})
    remote = plan(daemon, repo=REPO, quant="F16", options={"num_parallel": 4})
    assert 2048 < installed["settings"]["context_length"] < 32768
    assert remote["settings"] == installed["settings"]
    assert remote["parts"] == installed["parts"]


def test_a_sharded_quant_reads_every_shards_header(daemon, shards):
    planned = plan(daemon, repo="org/Split-GGUF", quant="Q8_0", options={"num_ctx": 2048})
    mapped = [p for p in planned["parts"] if p["text"] == "weights, mapped from the file"]
    assert [p["bytes"] for p in mapped] == [read_model_shape(shards).weights_bytes]
    assert planned["file_size"] == sum(s.stat().st_size for s in shards)
    second = daemon.post(
        "/api/plan", json={"repo": "org/Split-GGUF", "file": "Split-Q8_0-00002-of-00002.gguf"}
    )
    assert second.status_code == 400 and "first file" in second.json()["error"]


def test_a_gated_repo_is_read_with_the_daemons_token(daemon):
    assert plan(daemon, repo="org/Gated-GGUF", quant="F16")["source"] == "hub"


def test_a_quant_that_is_not_there_is_a_404_naming_those_that_are(daemon):
    answer = daemon.post("/api/plan", json={"repo": REPO, "quant": "Q4_K_M"})
    assert answer.status_code == 404 and "available: F16" in answer.json()["error"]
