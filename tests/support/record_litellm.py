"""Record LiteLLM's real requests to an Ollama server as the fixture ``tests/clients`` replays.

    python -m tests.support.record_litellm /path/to/a/venv/bin/python

LiteLLM is a large package with network habits of its own (its model price list, tokenizer
downloads), so it is not a test dependency: give the Python of a virtual environment that has
``litellm==1.97.0`` (``python -m venv v && v/bin/pip install litellm==1.97.0``). A daemon
serving ``tiny`` runs behind the recording proxy; LiteLLM's ``ollama/`` provider (which speaks
``/api/generate``) and ``ollama_chat/`` (``/api/chat``) each make a call, streamed and not,
plus an embedding; every request is written to ``tests/clients/fixtures/litellm.json`` as sent:
headers (LiteLLM sends no ``Content-Type``), path and body.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.daemon import ROOT, Daemon, free_port, make_store
from tests.support.polling import wait_for

__all__ = ["FIXTURE", "VERSION"]

FIXTURE = ROOT / "tests" / "clients" / "fixtures" / "litellm.json"
VERSION = "1.97.0"
# What the recorded calls are, run in the given Python with LiteLLM's own network habits off
CALLS = """
import os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
base = sys.argv[1]
hi = [{"role": "user", "content": "Why is the sky blue?"}]
for provider in ("ollama", "ollama_chat"):
    one = litellm.completion(model=f"{provider}/tiny", messages=hi, api_base=base, max_tokens=8)
    assert one.choices[0].message.content is not None
    parts = litellm.completion(
        model=f"{provider}/tiny", messages=hi, api_base=base, max_tokens=8, stream=True
    )
    assert list(parts)
vectors = litellm.embedding(model="ollama/tiny", input=["sky", "grass"], api_base=base)
assert len(vectors.data) == 2
print(litellm.__version__ if hasattr(litellm, "__version__") else "")
"""


def record(python: str, tmp: Path) -> dict:
    from localllm.model_registry.tiny_gguf import write_tiny_model

    model = write_tiny_model(tmp / "tiny.gguf", seed=2, end_of_turn="soon")
    out = tmp / "requests.jsonl"
    with Daemon(make_store(tmp / "store", {"tiny": model}), tmp / "logs") as daemon:
        port = free_port()
        command = [sys.executable, "-m", "tests.support.recording_proxy"]
        command += ["--upstream", daemon.url, "--port", str(port), "--out", str(out)]
        proxy = subprocess.Popen(command, cwd=ROOT)
        try:
            wait_for(lambda: _answers(port), 30, interval=0.1)
            done = subprocess.run(
                [python, "-c", CALLS, f"http://127.0.0.1:{port}"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0:
                raise SystemExit(f"LiteLLM's calls failed:\n{done.stderr[-3000:]}")
        finally:
            proxy.terminate()
            proxy.wait(10)
    requests = [json.loads(line) for line in out.read_text().splitlines()]
    return {"client": f"litellm {VERSION}", "requests": requests}


def _answers(port: int) -> bool:
    """The proxy listens (a connection, not a request: it would be recorded)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def main(python: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        recording = record(python, Path(tmp))
    FIXTURE.write_text(json.dumps(recording, indent=1) + "\n")
    print(f"{len(recording['requests'])} requests written to {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1])
