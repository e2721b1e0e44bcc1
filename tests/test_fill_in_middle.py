"""Fill in the middle: ``suffix`` on ``/api/generate`` and ``/v1/completions``, as code editors
(Continue, llama.vscode) and Ollama's docs send it, through the real daemon and runner.

The runner builds the prompt as llama-server's ``/infill`` does, ``[BOS] FIM_PRE prefix
FIM_SUF suffix FIM_MID``, so a FIM request must give, token for token, what the same prompt
written out by hand gives as a raw prompt (greedy).
"""

from __future__ import annotations

import httpx
import pytest

from localllm.model_registry.tiny_gguf import write_tiny_model
from localllm.model_registry.tiny_vocabulary import FIM_TOKENS
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

PREFIX, SUFFIX = "def compute_gcd(a, b):", "    return result"
GREEDY = {"temperature": 0, "num_predict": 12}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("fim")
    coder = write_tiny_model(root / "coder.gguf", fill_in_middle=True, seed=8)
    plain = write_tiny_model(root / "plain.gguf", seed=8)
    store = make_store(root / "store", {"coder": coder, "plain": plain})
    with Daemon(store, root / "logs") as running:
        yield running


def generate(daemon: Daemon, **body) -> httpx.Response:
    body = {"model": "coder", "stream": False, "options": GREEDY, **body}
    return httpx.post(daemon.url + "/api/generate", json=body, timeout=120)


def test_a_suffix_gives_what_the_fim_prompt_written_by_hand_gives(daemon):
    filled = generate(daemon, prompt=PREFIX, suffix=SUFFIX)
    assert filled.status_code == 200, filled.text
    pre, suf, mid = FIM_TOKENS
    by_hand = generate(daemon, prompt=f"{pre}{PREFIX}{suf}{SUFFIX}{mid}", raw=True)
    assert by_hand.status_code == 200, by_hand.text
    assert filled.json()["response"] == by_hand.json()["response"] != ""
    assert filled.json()["prompt_eval_count"] == by_hand.json()["prompt_eval_count"]
    # OpenAI's legacy completions take the same suffix
    completion = httpx.post(
        daemon.url + "/v1/completions",
        json={"model": "coder", "prompt": PREFIX, "suffix": SUFFIX, "temperature": 0,
              "max_tokens": 12},
        timeout=120,
    )  # fmt: skip
    assert completion.status_code == 200, completion.text
    assert completion.json()["choices"][0]["text"] == filled.json()["response"]


def test_markers_in_the_users_text_stay_text(daemon):
    """Code that spells a marker cannot move the gap: the texts are tokenized as plain text."""
    bare = generate(daemon, prompt="", suffix="x")
    spelled = generate(daemon, prompt="", suffix=FIM_TOKENS[2])
    assert bare.status_code == spelled.status_code == 200, spelled.text
    # read as the marker, the spelled one would be one token, as "x" is at most two; as text,
    # its 14 characters are many
    assert spelled.json()["prompt_eval_count"] >= bare.json()["prompt_eval_count"] + 3


def test_a_model_without_fim_tokens_says_so(daemon):
    answer = generate(daemon, model="plain", prompt=PREFIX, suffix=SUFFIX)
    assert answer.status_code == 400
    assert (
        "plain cannot fill in the middle: its vocabulary has no FIM tokens"
        in (answer.json()["error"])
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("system", "Be brief."), ("template", "{{ .Prompt }}"), ("think", True)],
)
def test_what_a_template_would_add_cannot_go_with_a_suffix(daemon, field, value):
    answer = generate(daemon, prompt=PREFIX, suffix=SUFFIX, **{field: value})
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"{field} cannot go with a suffix")


def test_an_empty_suffix_is_none_as_in_ollama(daemon):
    plain = generate(daemon, prompt=PREFIX)
    empty = generate(daemon, prompt=PREFIX, suffix="")
    assert empty.status_code == 200 and empty.json()["response"] == plain.json()["response"]
