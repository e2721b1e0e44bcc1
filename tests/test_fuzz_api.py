"""Fuzzing the HTTP API: hypothesis sends malformed, odd and hostile requests to the real app
(in process, with a real store and real runner processes) and every answer must be a
deliberate one: never a 500, always a JSON error body in the right shape, never a crash, and
the daemon still answering ``/api/ps`` and ``/api/tags`` afterwards.

The requests carry each API's real fields (OpenAI chat, completions, Responses, embeddings;
Anthropic messages; Ollama generate, chat, embed, create...): valid values most of the time,
so requests reach the engine, and in ``test_hostile_values_in_real_fields`` a valid request
with one to three of its fields replaced by hostile values: inf, NaN, 1e300 and 400-digit
integers, lists and objects where the other goes, lone surrogates, text nested thousands deep
and JSON nested past any need.

Budget: ``LOCALLLM_FUZZ_EXAMPLES`` examples per test (default 150: about 15 s in all; the
chat-template programs take a third of that many, each up to the 2 s render budget); the
examples are derandomized and no database is kept, so every run sends the same requests.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import os

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localllm.daemon.server import create_app
from localllm.daemon.settings import Settings
from localllm.model_registry.importer import import_gguf
from localllm.model_registry.store import Store
from tests.support.daemon import make_store
from tests.support.model_writers.projector import write_tiny_projector
from tests.support.processes import child_pids, peak_resident_bytes

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("LOCALLLM_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples every run in CI; raise EXAMPLES to explore
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
RUNNER_MEMORY = 256 << 20  # a runner of the tiny model peaks near 60 MB
DAEMON_MEMORY = 1 << 30  # this test process, with the daemon in it: near 170 MB
ACCEPTABLE_5XX = {502, 503, 507}  # hub unreachable, busy, out of memory: deliberate answers
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}}}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def mostly(valid, junk=json_values):
    """Valid values about nine times in ten, so requests get past validation into the engine."""
    return st.integers(0, 9).flatmap(lambda roll: junk if roll == 0 else valid)


odd_names = st.sampled_from(
    ["TINY", "nope", "", "../../etc/passwd", "a/b/c/d/e", "hf.co/x/y:q4", "tiny:", ":tag",
     "x" * 700, "con", "tiny\u0000", "ünï"]
) | st.text(max_size=20)  # fmt: skip
names = mostly(st.sampled_from(["tiny", "tiny:latest", "seer"]), odd_names)  # seer sees images
number = st.floats(-10, 10, allow_nan=False) | st.integers(-5, 100)
# Sampling integers at and past every edge a runner could trip on: int32, int64, the 250M-token
# penalty window that once cost a runner 1 GB, and far beyond.
HUGE = st.sampled_from([2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**63) - 1, 250_000_000])
huge_ints = HUGE | st.integers(-(2**70), 2**70)
huge_floats = st.sampled_from([1e308, -1e308, 3.0, -0.5]) | st.floats(-(2**64), 2**64)


def or_huge(valid, huge=huge_ints):
    """Valid values most of the time, huge ones often enough to reach every range check."""
    return st.integers(0, 3).flatmap(lambda roll: huge if roll == 0 else valid)


option_values = {
    "temperature": or_huge(st.floats(0, 2), huge_floats),
    "top_k": or_huge(st.integers(0, 100)),
    "top_p": or_huge(st.floats(0, 1), huge_floats),
    "min_p": or_huge(st.floats(0, 1), huge_floats),
    "typical_p": or_huge(st.floats(0, 1), huge_floats),
    "seed": st.integers(-(2**63), 2**64) | HUGE,
    "stop": st.lists(st.text(max_size=4), max_size=20) | st.text(max_size=300),
    "repeat_penalty": or_huge(number, huge_floats),
    "repeat_last_n": or_huge(st.integers(-2, 64)),
    "presence_penalty": or_huge(number, huge_floats),
    "frequency_penalty": or_huge(number, huge_floats),
    "num_keep": or_huge(st.integers(-1, 8)),
    "num_ctx": st.sampled_from([256, 16, 15, 0, -1, 10**12]) | HUGE,
    "num_batch": st.sampled_from([512, 1, 0, -4, 10**9]) | HUGE,
    "num_thread": st.sampled_from([1, 0, -3, 10**6]) | HUGE,
    "num_parallel": st.sampled_from([2, 0, 300, 10**5]) | HUGE,
    # not num_gpu: a value the machine cannot honour makes the scheduler reload for ever
    "mirostat": or_huge(st.integers(0, 2)),
    "mirostat_eta": or_huge(st.floats(0, 1), huge_floats),
    "unknown_option": scalars,
}
options = mostly(
    st.fixed_dictionaries({}, optional={k: mostly(v, scalars) for k, v in option_values.items()})
)
formats = mostly(
    st.sampled_from(["", "json", None, {"type": "object", "properties": {"a": {"type": "integer"}}},
                     {"type": "string", "maxLength": 3}, {"enum": ["x", "y"]}]),
    st.sampled_from(["yaml", {}]) | json_values.filter(lambda v: not isinstance(v, dict)),
)  # fmt: skip
keep_alive = mostly(
    st.sampled_from([None, "5m", -1, 300, "1h30m"]), st.sampled_from(["0", 0, "soon", ""]) | scalars
)
# Ollama's base64 images: junk, and a real one (seer takes it; tiny has no projector)
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
images = st.lists(
    st.text(max_size=8) | st.sampled_from([PNG_B64, "", "data:image/png;base64,AAAA", "aGk=\n"]),
    max_size=2,
)
arguments = mostly(st.dictionaries(st.text(max_size=3), scalars, max_size=2), st.text(max_size=6))
call = st.fixed_dictionaries(
    {"function": st.fixed_dictionaries({"name": st.text(max_size=5), "arguments": arguments})}
)
message = st.fixed_dictionaries(
    {"role": mostly(st.sampled_from(["user", "system", "assistant", "tool"]), st.just("wizard"))},
    optional={
        "content": mostly(st.text(max_size=30)),
        "images": images,
        "tool_calls": mostly(st.lists(call, max_size=1)),
        "tool_name": st.text(max_size=5),
    },
)
messages = st.lists(message, max_size=3)
content_parts = st.lists(
    st.sampled_from(
        [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            {"type": "image_url", "image_url": "http://169.254.169.254/latest"},
            {"type": "image_url"},
            {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
        ]
    )
    | st.fixed_dictionaries({"type": st.just("image_url"), "image_url": json_values}),
    max_size=3,
)
openai_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "developer"])},
    optional={"content": st.text(max_size=20) | content_parts},
)
tool_function = st.fixed_dictionaries(
    {"name": st.text(max_size=8)}, optional={"parameters": mostly(st.just(CITY), json_values)}
)
tools = st.lists(
    st.fixed_dictionaries({"type": st.just("function"), "function": tool_function}), max_size=2
)

anthropic_blocks = st.sampled_from(
    [
        {"type": "text", "text": "hi"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        {"type": "image", "source": {"type": "url", "url": "http://169.254.169.254/latest"}},
        {"type": "image", "source": {"type": "base64", "data": "!!"}},
        {"type": "image"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"city": "x"}},
        {"type": "tool_use", "id": "t1", "name": "f", "input": "x"},
        {"type": "tool_result", "tool_use_id": "t1", "content": "12"},
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "document"}]},
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "redacted_thinking", "data": "x"},
        {"type": "document", "source": {}},
    ]
) | st.dictionaries(
    st.sampled_from(["type", "text", "source", "content", "id", "name", "input", "tool_use_id"]),
    json_values,
    max_size=3,
)
anthropic_message = st.fixed_dictionaries(
    {
        "role": mostly(st.sampled_from(["user", "assistant"]), st.just("system")),
        "content": mostly(st.text(max_size=20) | st.lists(anthropic_blocks, max_size=3)),
    }
)
anthropic_tool = st.fixed_dictionaries(
    {"name": st.text(max_size=8)},
    optional={
        "input_schema": mostly(st.just(CITY), json_values),
        "description": st.text(max_size=5),
        "type": st.sampled_from(["custom", "web_search_20250305"]),
    },
)
anthropic_fields = {
    "system": mostly(st.text(max_size=10) | st.lists(anthropic_blocks, max_size=2)),
    "tools": mostly(st.lists(anthropic_tool, max_size=2)),
    "tool_choice": mostly(
        st.sampled_from(
            [{"type": "auto"}, {"type": "any"}, {"type": "none"}, {"type": "tool", "name": "f"}]
        )
    ),
    "thinking": mostly(
        st.sampled_from(
            [{"type": "enabled", "budget_tokens": 16}, {"type": "disabled"}, {"type": "adaptive"}]
        )
    ),
    "options": options,
    "keep_alive": keep_alive,
}
response_parts = st.lists(
    st.sampled_from(
        [
            {"type": "input_text", "text": "hi"},
            {"type": "output_text", "text": "yo", "annotations": []},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}"},
            {"type": "input_image", "image_url": "http://169.254.169.254/latest"},
            {"type": "input_image", "file_id": "file_1"},
            {"type": "input_file", "file_data": "x"},
            {"type": "refusal", "refusal": "no"},
        ]
    )
    | st.fixed_dictionaries({"type": st.just("input_image"), "image_url": json_values}),
    max_size=3,
)
response_item = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            ["message", "function_call", "function_call_output", "reasoning", "item_reference"]
        ),
        "role": mostly(st.sampled_from(["user", "assistant", "system", "developer"])),
        "content": mostly(st.text(max_size=20) | response_parts),
        "call_id": mostly(st.sampled_from(["c1", "c2", ""])),
        "name": mostly(st.text(max_size=5)),
        "arguments": mostly(st.sampled_from(['{"city": "Oslo"}', "{", ""])),
        "output": mostly(st.text(max_size=10) | response_parts),
        "summary": mostly(st.just([{"type": "summary_text", "text": "hm"}])),
    },
)
response_tools = st.lists(
    st.fixed_dictionaries(
        {"type": mostly(st.just("function"), st.just("web_search"))},
        optional={"name": st.text(max_size=8), "parameters": mostly(st.just(CITY), json_values)},
    ),
    max_size=2,
)

response_formats = mostly(
    st.sampled_from([{"type": "json_object"}, {"type": "json_schema", "name": "x", "schema": CITY}])
)


def generation_fields(**fields):
    common = {"options": options, "keep_alive": keep_alive, "format": formats,
              "stream": mostly(st.booleans()), "logprobs": mostly(st.booleans()),
              "top_logprobs": mostly(st.integers(0, 5), st.integers(-3, 30) | HUGE)}  # fmt: skip
    return st.fixed_dictionaries({"model": names}, optional={**common, **fields})


REQUESTS = {
    "/api/generate": generation_fields(
        prompt=mostly(st.text(max_size=40), scalars),
        system=mostly(st.text(max_size=20) | st.none()),
        template=st.sampled_from(["{{ .Prompt }}", "{{ if }", "{% for %}", "{{ 7 ** 999999 }}"])
        | st.text(max_size=20),
        raw=mostly(st.booleans()),
        suffix=st.sampled_from(["", None, "x"]),
        context=st.lists(st.integers(0, 10), max_size=3),
        images=images,
    ),
    "/api/chat": generation_fields(messages=mostly(messages), tools=mostly(tools)),
    "/api/embed": st.fixed_dictionaries(
        {},
        optional={
            "model": names,
            "input": st.text(max_size=20) | st.lists(st.text(max_size=10), max_size=3) | scalars,
            "truncate": st.booleans() | scalars,
            "dimensions": st.integers(-2, 100) | scalars,
            "options": options,
            "keep_alive": keep_alive,
        },
    ),
    "/api/embeddings": st.fixed_dictionaries(
        {}, optional={"model": names, "prompt": st.text(max_size=20) | scalars}
    ),
    "/api/show": st.fixed_dictionaries(
        {}, optional={"model": names, "name": names, "verbose": scalars}
    ),
    "/api/copy": st.fixed_dictionaries({}, optional={"source": names, "destination": names}),
    "/api/delete": st.fixed_dictionaries(  # never the model every other request uses
        {},
        optional={"model": names.filter(lambda n: n.lower().split(":")[0] not in ("tiny", "seer"))},
    ),
    "/api/create": st.fixed_dictionaries(
        {"model": names},
        optional={
            "modelfile": st.sampled_from(
                [
                    "FROM tiny\n",
                    "FROM /etc/passwd\n",
                    "FROM ./x.gguf\nADAPTER ../y\n",
                    'FROM tiny\nPARAMETER stop "a"\nTEMPLATE """{{ .Prompt }}"""\n',
                    "NOPE x\n",
                ]
            )
            | st.text(max_size=40),
            "from": names,
            "files": st.dictionaries(
                st.text(max_size=8),
                st.sampled_from(["sha256:" + "a" * 64, "sha256:../x", "md5:1", ""]),
                max_size=2,
            ),
            "parameters": options,
            "system": st.text(max_size=10),
            "license": st.text(max_size=5) | st.lists(st.text(max_size=5), max_size=2),
            "messages": json_values,
            "quantize": st.sampled_from(["q4_0", "Q8_0", "q9", "", "../x"]) | scalars,
            "stream": st.booleans(),
        },
    ),
    "/api/pull": st.fixed_dictionaries({}, optional={"model": names, "stream": st.booleans()}),
    "/api/pull/pause": st.fixed_dictionaries({}, optional={"model": names}),
    "/api/pull/cancel": st.fixed_dictionaries({}, optional={"model": names}),
    "/api/pull/resume": st.fixed_dictionaries(
        {}, optional={"model": names, "stream": st.booleans()}
    ),
    "/v1/responses": st.fixed_dictionaries(
        {"model": names},
        optional={
            "input": mostly(st.text(max_size=20) | st.lists(response_item, max_size=3)),
            "instructions": mostly(st.text(max_size=10)),
            "tools": mostly(response_tools),
            "tool_choice": mostly(st.sampled_from(["auto", "required", "none"]))
            | st.fixed_dictionaries({"type": st.just("function"), "name": st.text(max_size=8)}),
            "text": st.fixed_dictionaries({"format": response_formats}),
            "reasoning": st.fixed_dictionaries(
                {"effort": mostly(st.sampled_from(["low", "none"]))}
            ),
            "max_output_tokens": st.integers(-1, 3),
            "stream": st.booleans(),
            "store": st.booleans(),
            "previous_response_id": st.sampled_from(["resp_nope", ""]) | scalars,
            "metadata": json_values,
        },
    ),
    "/v1/chat/completions": st.fixed_dictionaries(
        {"model": names, "messages": st.lists(message | openai_message, max_size=3)},
        optional={
            "max_tokens": st.integers(-1, 3) | HUGE,
            "top_logprobs": or_huge(st.integers(0, 20)),
            "logprobs": st.booleans(),
            "seed": huge_ints,
            "top_k": or_huge(st.integers(0, 100)),
            "temperature": or_huge(st.floats(0, 2), huge_floats),
            "response_format": json_values,
            "tools": tools,
            "tool_choice": json_values,
            "stream": st.booleans(),
            "logit_bias": json_values,
            "n": scalars,
            "stop": json_values,
        },
    ),
    "/v1/messages": st.fixed_dictionaries(
        {"model": names, "messages": mostly(st.lists(anthropic_message, max_size=3))},
        optional={
            "max_tokens": st.integers(-1, 3) | scalars,
            "stop_sequences": json_values,
            "temperature": mostly(st.floats(0, 1), scalars),
            "stream": st.booleans(),
            "output_config": mostly(st.just({"format": {"type": "json_schema", "schema": CITY}})),
            **anthropic_fields,
        },
    ),
    "/v1/messages/count_tokens": st.fixed_dictionaries(
        {"model": names, "messages": mostly(st.lists(anthropic_message, max_size=3))},
        optional=anthropic_fields,
    ),
}


class Harness:
    """The app in process: one event loop for every example, so its runners live on."""

    def __init__(self, app):
        self.app = app
        self.loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=app)
        self.http = httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60)

    def send(self, method: str, path: str, **kwargs) -> tuple[int, bytes, str]:
        async def go():
            response = await self.http.request(method, path, **kwargs)
            return response.status_code, response.content, response.headers.get("content-type", "")

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        async def stop():
            await self.http.aclose()
            await self.app.state.pulls.shutdown()
            await self.app.state.scheduler.shutdown()

        self.loop.run_until_complete(stop())
        self.loop.close()


@pytest.fixture(scope="module")
def harness(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("fuzz")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    projector = write_tiny_projector(root / "mmproj.gguf")
    import_gguf(Store(store), "seer", tiny_model_path, projector=projector)
    config = Settings(
        models_dir=store,
        data_dir=root / "data",
        log_dir=root / "logs",
        hf_endpoint="http://127.0.0.1:9",  # nothing listens: pulls fail fast, offline
        num_ctx=1024,  # the valid bodies below fit, tools and all
        num_parallel=2,
        num_threads=1,
    )
    harness = Harness(create_app(config))
    yield harness
    harness.close()


def check(status: int, body: bytes, content_type: str, path: str) -> None:
    assert status < 500 or status in ACCEPTABLE_5XX, (status, body[:500])
    assert b"internal server error" not in body, body[:500]  # in a stream's error event too
    if "json" not in content_type:
        return
    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
    for line in lines:
        answer = isinstance(line, dict) and line.get("object") == "response"  # has error: null
        if isinstance(line, dict) and "error" in line and not answer:
            error = line["error"]
            message = error["message"] if path.startswith("/v1/") else error
            assert isinstance(message, str) and message
            assert "internal server error" not in message, message
            assert "Traceback" not in message and "/tmp/" not in message, message
    if status >= 400:
        assert len(lines) == 1 and "error" in lines[0], body[:300]


def bounded(path: str, body: dict) -> dict:
    """Keep generation short so the budget goes to variety, not to long answers."""
    if path in ("/api/generate", "/api/chat") and isinstance(body.get("options"), dict):
        body["options"] = {**body["options"], "num_predict": 3}
    elif path in ("/api/generate", "/api/chat"):
        body.setdefault("options", {"num_predict": 3})
    if path in ("/v1/chat/completions", "/v1/messages"):
        body.setdefault("max_tokens", 3)
    if path == "/v1/responses":
        body.setdefault("max_output_tokens", 3)
    return body


@FUZZ
@given(data=st.data())
def test_json_requests_never_500(harness, data):
    path = data.draw(st.sampled_from(sorted(REQUESTS)))
    body = bounded(path, data.draw(REQUESTS[path]))
    method = "DELETE" if path == "/api/delete" else "POST"
    status, content, content_type = harness.send(method, path, json=body)
    check(status, content, content_type, path)
    check_memory()


def check_still_answering(harness) -> None:
    """What a request leaves behind (a loaded model's expiry, a stored response) must not
    break the answers everyone else gets."""
    for where in ("/api/ps", "/api/tags", "/v1/models"):
        status, content, _ = harness.send("GET", where)
        assert status == 200, (where, status, content[:300])


# -- hostile values in the real fields of every API ------------------------------------------
# A valid request of each API, and the fields (dotted paths into it: "tool_choice.type",
# "messages.0.tool_calls.0.function.arguments") where a hostile value is put instead.
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "x"}'}}
NATIVE_CALL = {"function": {"name": "f", "arguments": {"city": "x"}}}
TOOL = {"type": "function", "function": {"name": "f", "description": "d", "parameters": CITY}}
FORMAT = {"type": "json_schema", "name": "x", "schema": CITY}
VALID_BODIES: dict[str, tuple[dict, tuple[str, ...]]] = {
    "/api/generate": (
        {"model": "tiny", "prompt": "hi", "options": {"num_predict": 2}, "keep_alive": "5m"},
        ("prompt", "system", "suffix", "template", "context", "images", "format", "format.type",
         "format.properties.city.maxLength", "options", "options.temperature", "options.num_ctx",
         "options.stop", "options.seed", "keep_alive", "raw", "think", "top_logprobs"),
    ),
    "/api/chat": (
        {"model": "tiny", "options": {"num_predict": 2}, "keep_alive": 300, "tools": [TOOL],
         "messages": [{"role": "user", "content": "hi"},
                      {"role": "assistant", "content": "", "tool_calls": [NATIVE_CALL]},
                      {"role": "tool", "content": "ok", "tool_name": "f"}]},
        ("messages", "messages.0", "messages.0.content", "messages.0.role", "messages.0.images",
         "messages.1.tool_calls", "messages.1.tool_calls.0.function.arguments",
         "messages.1.tool_calls.0.function", "tools", "tools.0.function.parameters", "format",
         "options.top_k", "options.num_predict", "keep_alive", "think"),
    ),
    "/api/embed": (
        {"model": "tiny", "input": ["one", "two"], "keep_alive": 300},
        ("input", "input.0", "truncate", "dimensions", "options", "keep_alive"),
    ),
    "/api/create": (
        {"model": "fuzzed", "from": "tiny", "parameters": {"temperature": 0.5}},
        ("from", "files", "parameters", "parameters.temperature", "parameters.stop", "system",
         "template", "license", "messages", "quantize", "adapters"),
    ),
    "/v1/chat/completions": (
        {"model": "tiny", "max_tokens": 2, "keep_alive": 300, "tools": [TOOL],
         "messages": [{"role": "user", "content": "hi"},
                      {"role": "assistant", "content": None, "tool_calls": [CALL]},
                      {"role": "tool", "tool_call_id": "c1", "content": "ok"}]},
        ("messages", "messages.0.content", "messages.1.tool_calls.0.function.arguments",
         "messages.1.tool_calls", "max_tokens", "temperature", "top_p", "n", "stop", "seed",
         "logit_bias", "logprobs", "top_logprobs", "response_format", "response_format.type",
         "response_format.json_schema", "tools", "tools.0.function.parameters", "tool_choice",
         "tool_choice.function.name", "presence_penalty", "stream_options", "keep_alive",
         "reasoning_effort"),
    ),
    "/v1/completions": (
        {"model": "tiny", "prompt": "hi", "max_tokens": 2},
        ("prompt", "max_tokens", "temperature", "stop", "suffix", "logprobs", "echo", "n",
         "seed", "best_of", "logit_bias"),
    ),
    "/v1/embeddings": (
        {"model": "tiny", "input": "hello"},
        ("input", "dimensions", "encoding_format", "user"),
    ),
    "/v1/responses": (
        {"model": "tiny", "max_output_tokens": 2, "instructions": "be brief", "tools": [
            {"type": "function", "name": "f", "parameters": CITY}],
         "input": [{"type": "message", "role": "user", "content": "hi"},
                   {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]},
                   {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                   {"type": "function_call_output", "call_id": "c1", "output": "ok"}]},
        ("input", "input.0.content", "input.1.summary", "input.2.arguments", "input.3.output",
         "instructions", "tools", "tools.0.parameters", "tool_choice", "tool_choice.type",
         "text", "text.format", "reasoning", "reasoning.effort", "max_output_tokens",
         "previous_response_id", "metadata", "user", "temperature", "top_p", "keep_alive",
         "parallel_tool_calls", "truncation"),
    ),
    "/v1/messages": (
        {"model": "tiny", "max_tokens": 2, "tools": [{"name": "f", "input_schema": CITY}],
         "messages": [{"role": "user", "content": "hi"},
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                                         "name": "f", "input": {"city": "x"}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                    "content": "ok"}]}]},
        ("messages", "messages.0.content", "messages.1.content.0.input",
         "messages.2.content.0.content", "system", "max_tokens", "temperature", "top_k",
         "top_p", "stop_sequences", "tools", "tools.0.input_schema", "tool_choice",
         "tool_choice.type", "tool_choice.name", "thinking", "thinking.type",
         "thinking.budget_tokens", "output_config", "output_config.format", "metadata",
         "keep_alive"),
    ),
}  # fmt: skip
VALID_BODIES["/v1/messages/count_tokens"] = VALID_BODIES["/v1/messages"]

DEEP_MARK = "\x00deep:{}\x00"  # replaced by that many levels of raw JSON nesting when sent
hostile_numbers = st.sampled_from(
    [math.inf, -math.inf, math.nan, 1e300, -1e300, 10**400, -(10**400), 2**63, 2**64, 1e-320, -1]
)
wrong_shapes = st.sampled_from(
    [[], {}, [[]], [{}], {"type": []}, {"type": {}}, "", "x", True, None, [1, "a"], 0]
)
lone_surrogates = st.sampled_from(["\ud800", "x\udfff", "\udc00\ud800", "ok \ud83d"]) | st.text(
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3
)
deep_text = st.integers(5_000, 100_000).map(lambda n: "[" * n + "]" * n)  # e.g. arguments
deep_json = st.integers(129, 5_000).map(DEEP_MARK.format)
long_digits = st.integers(100, 20_000).map(lambda n: "1" * n)
HOSTILE_KINDS = {
    "numbers": hostile_numbers,
    "shapes": wrong_shapes,
    "surrogates": lone_surrogates,
    "deep text": deep_text,
    "deep json": deep_json,
    "digits": long_digits,
}
hostile_values = st.one_of(*HOSTILE_KINDS.values(), json_values)


def put(body: dict, where: str, value: object) -> dict:
    """``body`` with the field at the dotted path ``where`` set to ``value`` (made if absent;
    a list index past the end or into a non-list sets a key of that name instead)."""
    *parents, last = where.split(".")
    node: object = body
    for part in parents:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            if not isinstance(node.get(part), dict | list):
                node[part] = {}
            node = node[part]
        else:
            return body
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    return body


def written(body: dict) -> bytes:
    """``body`` as a hostile client writes it: NaN, Infinity and lone surrogates escaped
    (``json.dumps`` does), deep nesting raw."""
    text = json.dumps(body)
    while "\\u0000deep:" in text:
        start = text.index('"\\u0000deep:')
        end = text.index('\\u0000"', start + 1) + 7
        levels = int(text[start + 12 : end - 7])
        text = text[:start] + "[" * levels + "]" * levels + text[end:]
    return text.encode()


def post_written(harness, path: str, body: dict) -> tuple[int, bytes, str]:
    headers = {"content-type": "application/json"}
    return harness.send("POST", path, content=written(body), headers=headers)


def send_hostile(harness, path: str, body: dict) -> None:
    status, content, content_type = post_written(harness, path, body)
    check(status, content, content_type, path)
    check_still_answering(harness)


def streaming(path: str) -> bool:
    return path not in ("/api/embed", "/v1/embeddings", "/api/create", "/v1/messages/count_tokens")


@FUZZ
@given(data=st.data())
def test_hostile_values_in_real_fields(harness, data):
    """A valid request of each API with one to three of its real fields hostile: each answer
    is deliberate (a 400 naming the field, or served), and the daemon keeps answering."""
    path = data.draw(st.sampled_from(sorted(VALID_BODIES)))
    base, slots = VALID_BODIES[path]
    body = json.loads(json.dumps(base))
    for where in data.draw(st.lists(st.sampled_from(slots), min_size=1, max_size=3, unique=True)):
        put(body, where, copy.deepcopy(data.draw(hostile_values, label=where)))  # unshared
    if streaming(path):
        body["stream"] = data.draw(st.booleans(), label="stream")
    send_hostile(harness, path, body)
    check_memory()


FIELDS = [(path, where) for path, (_, slots) in sorted(VALID_BODIES.items()) for where in slots]


@pytest.mark.parametrize("path", sorted(VALID_BODIES))
def test_the_valid_bodies_are_served(harness, path):
    """What the hostile values go into is served as it is: a hostile field is then the one
    thing wrong with a request, and the request reaches the engine when that field allows."""
    status, content, _ = post_written(harness, path, VALID_BODIES[path][0])
    assert status == 200, content[:300]


@pytest.mark.parametrize(("path", "where"), FIELDS)
@settings(FUZZ, max_examples=max(1, EXAMPLES // 150))
@given(data=st.data())
def test_every_field_takes_every_kind_of_hostile_value(harness, path, where, data):
    """Each real field of each API, given one value of each hostile kind (a number past any
    clock, a list where an object goes, a lone surrogate, nesting thousands deep...), in a
    request otherwise valid (streamed when the API streams): never a 500, and the daemon keeps
    answering. The random combinations above may miss a field; this sweep does not."""
    base, _ = VALID_BODIES[path]
    for kind, values in HOSTILE_KINDS.items():
        body = put(json.loads(json.dumps(base)), where, data.draw(values, label=kind))
        if streaming(path):
            body["stream"] = data.draw(st.booleans(), label=f"{kind}: stream")
        send_hostile(harness, path, body)


def check_memory() -> None:
    """No request made the daemon or a runner hold far more than a tiny model needs."""
    runners = {pid: peak_resident_bytes(pid) for pid in child_pids(os.getpid())}
    assert all(peak < RUNNER_MEMORY for peak in runners.values()), runners
    assert peak_resident_bytes(os.getpid()) < DAEMON_MEMORY


SAMPLING_INTS = {
    "top_k": st.integers(0, 100),
    "repeat_last_n": st.integers(-1, 64),
    "seed": st.integers(-5, 5),
    "num_keep": st.integers(-1, 8),
    "mirostat": st.integers(0, 2),
    "num_batch": st.sampled_from([0, 64, 512]),
}
OPENAI_INTS = {"top_k": st.integers(0, 100), "seed": st.integers(-5, 5),
               "max_tokens": st.integers(0, 3), "top_logprobs": st.integers(0, 20),
               "n": st.integers(1, 1)}  # fmt: skip


def valid_or_huge(fields: dict) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({}, optional={k: or_huge(v, HUGE) for k, v in fields.items()})


def numbers_request(native: bool, numbers: dict) -> tuple[str, dict]:
    """A request that is valid but for ``numbers`` (with penalties on: a window is allocated)."""
    if native:
        options = {"num_predict": 2, "repeat_penalty": 1.2, **numbers}
        return "/api/generate", {"model": "tiny", "prompt": "Hi", "options": options}
    body = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    return "/v1/chat/completions", {**body, "logprobs": True, "frequency_penalty": 0.5, **numbers}


@FUZZ
@given(
    request=st.tuples(st.just(True), valid_or_huge(SAMPLING_INTS))
    | st.tuples(st.just(False), valid_or_huge(OPENAI_INTS))
)
@example(request=(True, {"repeat_last_n": 250_000_000}))
def test_sampling_integers_are_answered_and_bounded(harness, request):
    """Each is answered (200, or a 400 naming the number), and no value, however big, makes a
    runner or the daemon balloon (a 250M-token penalty window cost a runner 1 GB)."""
    native, numbers = request
    path, body = numbers_request(native, numbers)
    status, content, content_type = harness.send("POST", path, json=body)
    check(status, content, content_type, path)
    assert status in (200, 400), content
    if status == 400:
        error = json.loads(content)["error"]
        message = error["message"] if isinstance(error, dict) else error
        assert any(name in message for name in numbers), message
    check_memory()


@FUZZ
@given(
    path=st.sampled_from([*sorted(REQUESTS), "/api/blobs/sha256:" + "0" * 64]),
    raw=st.binary(max_size=64)
    | st.sampled_from([b"", b"null", b"[]", b'"x"', b"{", b'{"model": 1}', b"\xff\xfe"]),
)
def test_malformed_bodies_are_400s(harness, path, raw):
    method = "DELETE" if path == "/api/delete" else "POST"
    status, content, content_type = harness.send(method, path, content=raw)
    check(status, content, content_type, path)


URL_TEXT = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=80)
queries = st.fixed_dictionaries(
    {},
    optional={"q": st.text(max_size=10), "limit": scalars, "repo": st.text(max_size=30)}
    | {"lines": scalars},
)


@FUZZ
@given(
    digest=URL_TEXT
    | st.sampled_from(["sha256:" + "f" * 64, "sha256-" + "f" * 64, "sha256:" + "F" * 64]),
    method=st.sampled_from(["HEAD", "POST"]),
    query=queries,
)
def test_paths_and_queries(harness, digest, method, query):
    path = "/api/blobs/" + digest.replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    status, content, content_type = harness.send(method, path, content=b"GGUF")
    if method == "HEAD":  # no body: only the status means anything
        assert status < 500, status
    else:
        check(status, content, content_type, path)
    for where in ("/api/hub/files", "/api/hub/search", "/api/logs", "/api/tags", "/api/pulls"):
        params = {k: str(v) for k, v in query.items()}
        status, content, content_type = harness.send("GET", where, params=params)
        check(status, content, content_type, where)


@pytest.mark.parametrize(
    "schema", [{"type": "nope"}, {"type": "object", "properties": 5}, {"enum": []}]
)
def test_a_json_schema_the_grammar_cannot_express_is_a_400(harness, schema):
    body = {"model": "tiny", "prompt": "x", "format": schema, "options": {"num_predict": 2}}
    status, content, _ = harness.send("POST", "/api/generate", json=body)
    assert status == 400, content


# -- chat templates: small Jinja programs from loops, filters and concatenation ---------------
# Most render; some loop or grow past the render budget. Every one is answered 200 or 400
# (never a 500), and quickly: the budget stops a runaway render, not the client's patience.
counts = st.sampled_from([0, 1, 2, 7, 300, 12000, 10**6, 10**9])
TEMPLATE_FILTERS = [
    "center({n})", "indent({n})", "format({n})", "replace('a', 'b' * {n})", "truncate({n})",
    "batch({n}) | list", "wordwrap({n})", "join('-')", "upper", "list", "length", "tojson",
    "string", "first", "reverse | list", "unique | list", "trim", "sum",
]  # fmt: skip
template_atoms = counts.map(str) | st.sampled_from(
    ["'ab'", "'x' * 1000", "messages[0].content", "ns.s", "i", "[1, 2]", "range(3) | list",
     "lipsum(1)", "namespace(a=1)", "loop", "'%s-%s'", "{'k': ns.s}", "messages"]
)  # fmt: skip


def _template_operations(inner):
    return st.one_of(
        st.tuples(inner, inner).map(lambda pair: f"({pair[0]} ~ {pair[1]})"),
        st.tuples(inner, inner).map(lambda pair: f"({pair[0]} + {pair[1]})"),
        st.tuples(inner, counts).map(lambda pair: f"({pair[0]} * {pair[1]})"),
        st.tuples(inner, inner).map(lambda pair: f"[{pair[0]}, {pair[1]}]"),
        st.tuples(inner, st.sampled_from(TEMPLATE_FILTERS), counts).map(
            lambda parts: f"({parts[0]} | {parts[1].format(n=parts[2])})"
        ),
    )


template_expressions = st.recursive(template_atoms, _template_operations, max_leaves=5)


def _template_blocks(inner):
    return st.one_of(
        st.tuples(counts, inner).map(lambda p: f"{{% for i in range({p[0]}) %}}{p[1]}{END_FOR}"),
        st.tuples(template_expressions, inner).map(lambda p: f"{{% if {p[0]} %}}{p[1]}{END_IF}"),
        st.lists(inner, min_size=2, max_size=3).map("".join),
    )


END_FOR, END_IF = "{% endfor %}", "{% endif %}"


template_statements = st.one_of(
    template_expressions.map(lambda e: f"{{{{ {e} }}}}"),
    template_expressions.map(lambda e: f"{{% set ns.s = {e} %}}"),
)
template_programs = st.recursive(template_statements, _template_blocks, max_leaves=4).map(
    lambda body: "{% set ns = namespace(s='') %}" + body
)


@settings(FUZZ, max_examples=max(EXAMPLES // 3, 10))
@given(template=template_programs)
def test_template_programs_are_200s_or_400s_within_the_budget(harness, template):
    body = {"model": "tiny", "prompt": "hi", "template": template, "stream": False}
    status, content, content_type = harness.send(
        "POST", "/api/generate", json={**body, "options": {"num_predict": 1}}
    )
    assert status in (200, 400), (status, content[:500])
    check(status, content, content_type, "/api/generate")
