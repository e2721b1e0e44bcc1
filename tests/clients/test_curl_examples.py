"""The curl lines of Ollama's and OpenAI's documentation, run as written with the real curl
against the real daemon: the first thing most people paste.

``curl -d '{...}'`` labels its body ``application/x-www-form-urlencoded``; Ollama and
llama-server read any body as JSON, and so must we (FastAPI refuses it by default). What
changes from the docs is only what must: the address (``http://localhost:11434``,
``https://api.openai.com``) becomes the daemon's, the blob digests become our file's, and the
store holds a generated tiny model under every name the examples use. Each example is
checked for the status Ollama gives it and for an answer of its API's shape.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from localllm.model_registry.importer import import_gguf
from localllm.model_registry.store import Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon
from tests.support.local_hub import LocalHub
from tests.support.model_writers.projector import write_tiny_projector

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

FIXTURES = Path(__file__).parent / "fixtures"
ADDRESSES = ("http://localhost:11434", "https://api.openai.com")
EXAMPLE_DIGESTS = (  # the blobs the docs upload and create from; ours stand in for them
    "29fdb92e57cf0827ded04ae6461b5931d01fa595843f55d36f5b275a52087dd2",
    "432f310a77f4650a88d0fd59ecdd7cebed8d684bafea53cbff0473542964f0c3",
)
TEXT_MODELS = (
    "llama3.2", "llama3.1", "llama3.1:8b", "llama3:13b", "mistral",
    "all-minilm", "gemma4", "qwen3-coder", "qwen3:8b", "gpt-oss:20b", "gpt-3.5-turbo",
    "mymodel", "claude-3-5-sonnet", "gpt-5", "gpt-4.1", "text-embedding-ada-002",
)  # fmt: skip
VISION_MODELS = ("llava", "qwen3-vl:8b")
CODE_MODEL = "codellama:code"  # fills in the middle (its vocabulary has FIM tokens)
FP16_MODEL = "llama3.2:3b-instruct-fp16"  # quantized by an example
PULLED = ("bartowski/Llama-3.2-3B-Instruct-GGUF", "Llama-3.2-3B-Instruct-Q4_K_M.gguf")
# What Ollama itself answers these with: every other example succeeds.
REFUSED = {
    # its "// the message from the model" comments make the body no JSON (Go refuses it too)
    "docs/api.md:885": (400, "the request body is not JSON"),
    # a model from safetensors files: we import GGUF only
    "docs/api.md:1306": (400, "convert_hf_to_gguf.py"),
    # pushing to ollama.com: there is no registry to push to
    "docs/api.md:1642": (501, "localllm cannot push models"),
}

# What the last object of each route's answer holds (a stream's last chunk or event too)
LAST_HOLDS = {
    "/api/generate": "done", "/api/chat": "done", "/api/embed": "embeddings",
    "/api/embeddings": "embedding", "/api/create": "status", "/api/pull": "status",
    "/api/copy": "status", "/api/delete": "status", "/api/show": "modelfile",
    "/api/tags": "models", "/api/ps": "models", "/api/version": "version",
    "/v1/chat/completions": "choices", "/v1/responses": "output", "/v1/messages": "type",
    "/v1/embeddings": "data",
}  # fmt: skip


@dataclass(frozen=True)
class Example:
    source: str  # the docs file and line
    command: str  # as written there


def examples(name: str) -> list[Example]:
    """The fixture's examples: blocks of a ``# source`` line and a curl command."""
    found = []
    for block in (FIXTURES / name).read_text().split("\n\n"):
        lines = block.strip().splitlines()
        if len(lines) > 1 and lines[0].startswith("# ") and lines[1].startswith("curl "):
            found.append(Example(lines[0][2:], "\n".join(lines[1:])))
    return found


OLLAMA = examples("ollama_docs.curl")
OPENAI = examples("openai_docs.curl")


def test_the_fixtures_hold_every_example_of_the_docs():
    assert len(OLLAMA) == 56 and len(OPENAI) == 6
    assert sum(e.source.startswith("docs/api.md:") for e in OLLAMA) == 40
    assert set(REFUSED) <= {e.source for e in OLLAMA}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("curl-examples")


@pytest.fixture(scope="module")
def model_file(workspace) -> Path:
    """The file ``curl -T model.gguf`` uploads, in the folder the examples run in."""
    return write_tiny_model(workspace / "model.gguf", end_of_turn="soon", seed=5)


@pytest.fixture(scope="module")
def hub(tiny_q8_model_path):
    with LocalHub() as hub:
        hub.add_repo(PULLED[0], {PULLED[1]: tiny_q8_model_path.read_bytes()})
        yield hub


@pytest.fixture(scope="module")
def daemon(workspace, model_file, hub):
    store = Store(workspace / "store")
    projector = write_tiny_projector(workspace / "mmproj.gguf")
    fp16 = write_tiny_model(workspace / "fp16.gguf", file_type="F16", seed=6)
    code = write_tiny_model(workspace / "code.gguf", fill_in_middle=True, end_of_turn="soon")
    for name in TEXT_MODELS:
        import_gguf(store, name, model_file)
    for name in VISION_MODELS:
        import_gguf(store, name, model_file, projector=projector)
    import_gguf(store, FP16_MODEL, fp16)
    import_gguf(store, CODE_MODEL, code)
    env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_NUM_CTX": "1024"}
    with Daemon(workspace / "store", workspace / "logs", env=env) as running:
        yield running


def run_as_written(example: Example, daemon: Daemon, folder: Path, digest: str) -> tuple[int, str]:
    """The example run by bash as the docs write it, pointed at the daemon; its status and
    body. curl only gains where to write them (``-sS -o ... -w``)."""
    command = example.command
    for address in ADDRESSES:
        command = command.replace(address, daemon.url)
    for example_digest in EXAMPLE_DIGESTS:
        command = command.replace(example_digest, digest)
    body = folder / "answer"
    command = re.sub(r"^curl ", f"curl -sS -o '{body}' -w '%{{http_code}}' ", command)
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=folder,
        env={**os.environ, "OPENAI_API_KEY": "unused"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout), body.read_text(errors="replace") if body.exists() else ""


def answers(body: str) -> list[dict]:
    """The JSON objects of an answer: one, NDJSON lines, or server-sent events."""
    lines = [line.removeprefix("data: ") for line in body.splitlines() if line.strip()]
    lines = [line for line in lines if line != "[DONE]" and not line.startswith("event: ")]
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("example", OLLAMA + OPENAI, ids=lambda e: e.source)
def test_the_example_works_as_written(example, daemon, workspace, model_file):
    digest = hashlib.sha256(model_file.read_bytes()).hexdigest()
    status, body = run_as_written(example, daemon, workspace, digest)
    if example.source in REFUSED:
        expected, says = REFUSED[example.source]
        assert (status, says in body) == (expected, True), body[:500]
        return
    assert status == 200, f"{example.source}: {status} {body[:500]}"
    if " -I " in example.command:
        return  # a HEAD: no body
    if "/api/blobs/" in example.command:
        assert body == ""  # an upload answers 201/200 with nothing to read
        return
    objects = answers(body)
    assert objects and not any(o.get("error") for o in objects), body[:500]
    [route] = re.findall(r"(/(?:api|v1)/[a-z/]+)", example.command)
    assert LAST_HOLDS[route] in objects[-1], objects[-1]
