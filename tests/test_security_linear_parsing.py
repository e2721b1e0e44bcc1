"""Nothing quadratic on the event loop: inputs that once cost seconds per request (thousands of
Responses reasoning items, a Modelfile number of 20,000 digits, a harmony header that never
ends) are read in one pass, and past a cap they are a clear 400. How long they take is
``bench/hostile_inputs.py``'s business; these say what comes out."""

from __future__ import annotations

import pytest

from localllm.daemon.api.openai_responses import ResponsesRequest
from localllm.daemon.inference.thinking_split import HarmonySplitter
from localllm.daemon.server import create_app
from localllm.daemon.server.openai.responses_translate import responses_turn
from localllm.model_registry.errors import ModelfileError
from localllm.model_registry.modelfile import parse_modelfile
from tests.support.in_process import app_client, app_settings


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with app_client(create_app(app_settings(tmp_path_factory.mktemp("linear")))) as client:
        yield client


def reasoning(text: str) -> dict:
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def test_more_input_items_than_any_session_holds_is_a_400(client):
    items = [reasoning("x")] * 10_001
    answer = client.post("/v1/responses", json={"model": "nope", "input": items})
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["param"] == "input" and "10,001 items; at most 10,000" in error["message"]


def test_thousands_of_reasoning_items_become_one_thinking():
    items = [{"type": "message", "role": "user", "content": "hi"}]
    items += [reasoning(f"{n} ") for n in range(6000)]
    items.append({"type": "message", "role": "assistant", "content": "done"})
    turn = responses_turn(ResponsesRequest(model="m", input=items), None)
    [user, assistant] = turn.history
    assert assistant["thinking"] == "".join(f"{n} " for n in range(6000))
    assert assistant["content"] == "done" and user["content"] == "hi"


def test_consecutive_function_calls_are_one_assistant_turn():
    calls = [
        {"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": "{}"}
        for n in range(4000)
    ]
    turn = responses_turn(ResponsesRequest(model="m", input=[reasoning("plan"), *calls]), None)
    [assistant] = turn.history
    assert assistant["thinking"] == "plan"
    assert [c["id"] for c in assistant["tool_calls"]] == [f"c{n}" for n in range(4000)]


def test_an_empty_reasoning_item_adds_no_thinking():
    items = [reasoning(""), {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}]
    [assistant] = responses_turn(ResponsesRequest(model="m", input=items), None).history
    assert "thinking" not in assistant


@pytest.mark.parametrize("digits", ["1" * 20_000 + "x", "1" * 20_000, "0." + "5" * 100])
def test_a_modelfile_number_of_thousands_of_digits_is_refused_by_its_length(digits):
    with pytest.raises(ModelfileError, match="a number of at most 64 characters, got"):
        parse_modelfile(f"FROM tiny\nPARAMETER temperature {digits}\n")


def test_ordinary_numbers_still_parse():
    text = "FROM x\nPARAMETER temperature 0.25\nPARAMETER top_p .5\nPARAMETER seed -42\n"
    text += "PARAMETER min_p 1e-2\nPARAMETER repeat_penalty 1.\n"
    parameters = parse_modelfile(text).parameters
    assert parameters == {
        "temperature": 0.25, "top_p": 0.5, "seed": -42, "min_p": 0.01, "repeat_penalty": 1.0
    }  # fmt: skip
    with pytest.raises(ModelfileError, match="needs a number"):
        parse_modelfile("FROM x\nPARAMETER temperature 1.2.3\n")


def test_create_refuses_it_as_a_400(client):
    modelfile = "FROM tiny\nPARAMETER temperature " + "1" * 20_000 + "x\n"
    answer = client.post("/api/create", json={"model": "m", "modelfile": modelfile})
    assert answer.status_code == 400 and "at most 64 characters" in answer.json()["error"]


def test_a_harmony_header_that_never_ends_is_kept_short():
    splitter = HarmonySplitter(opened=False)
    junk = "<|start|>assistant " + "x" * 100_000
    assert splitter.feed(junk) == ("", "")
    assert splitter.feed("<|channel|>final<|message|>Hi<|return|>") == ("", "Hi")
    assert splitter.feed("<|start|>assistant<|channel|>analysis<|message|>hm") == ("hm", "")
