"""A stand-in for ``daemon.client.Client`` and canned daemon answers, for the CLI tests.

``FakeClient`` implements the methods the CLI calls, in Ollama's shapes, and records each
call, so command tests check output and flows without a daemon.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon.client import ModelNotFound

MODEL = {
    "name": "tiny:latest",
    "model": "tiny:latest",
    "modified_at": "2020-01-01T00:00:00Z",
    "size": 4_700_000_000,
    "digest": "sha256:" + "ab" * 32,
    "details": {"format": "gguf", "family": "llama", "parameter_size": "8.0B"},
}

SHOW = {
    "modelfile": "FROM tiny\nPARAMETER temperature 0.7\n",
    "parameters": 'temperature                    0.7\nstop                           "<|im_end|>"',
    "template": "{{ .Prompt }}",
    "system": "You are tiny.",
    "license": "MIT License\nCopyright\nline three",
    "details": {"family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
    "model_info": {
        "general.architecture": "llama",
        "general.parameter_count": 8_030_261_248,
        "llama.context_length": 131072,
        "llama.embedding_length": 4096,
    },
    "capabilities": ["completion", "tools"],
}


@dataclass
class FakeClient:
    models: list[dict] = field(default_factory=lambda: [dict(MODEL)])
    loaded: list[dict] = field(default_factory=list)
    show_info: dict = field(default_factory=lambda: dict(SHOW))
    pull_events: list[dict] = field(default_factory=list)
    chat_chunks: list[dict] = field(default_factory=list)
    blobs: set[str] = field(default_factory=set)
    create_events: list[dict] = field(default_factory=lambda: [{"status": "success"}])
    calls: list[tuple] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)  # names show() reports as not found

    def list_models(self) -> list[dict]:
        self.calls.append(("list_models",))
        return self.models

    def running(self) -> list[dict]:
        self.calls.append(("running",))
        return self.loaded

    def show(self, name: str, verbose: bool = False) -> dict:
        self.calls.append(("show", name))
        if name in self.missing:
            raise ModelNotFound(f"model '{name}' not found", 404)
        return self.show_info

    def delete(self, name: str) -> None:
        self.calls.append(("delete", name))
        if name in self.missing:
            raise ModelNotFound(f"model '{name}' not found", 404)

    def copy(self, source: str, destination: str) -> None:
        self.calls.append(("copy", source, destination))

    def pull(self, name: str) -> Iterator[dict]:
        self.calls.append(("pull", name))
        self.missing.discard(name)
        yield from self.pull_events

    def pause_pull(self, name: str) -> None:
        self.calls.append(("pause_pull", name))

    def cancel_pull(self, name: str) -> None:
        self.calls.append(("cancel_pull", name))

    def pulls(self) -> list[dict]:
        return [{"name": "big:latest", "status": "paused", "total": 200, "completed": 50}]

    def chat(self, model: str, messages: list[dict], **kwargs: Any) -> Iterator[dict]:
        self.calls.append(("chat", model, [dict(m) for m in messages], kwargs))
        yield from self.chat_chunks

    def unload(self, name: str) -> None:
        self.calls.append(("unload", name))

    def blob_exists(self, digest: str) -> bool:
        self.calls.append(("blob_exists", digest))
        return digest in self.blobs

    def upload_blob(self, path: Path, digest: str, on_progress=None) -> None:
        self.calls.append(("upload_blob", Path(path).name, digest))
        if on_progress:
            on_progress(Path(path).stat().st_size)
        self.blobs.add(digest)

    def create(self, name: str, modelfile: str, files: dict, quantize=None) -> Iterator[dict]:
        self.calls.append(("create", name, modelfile, dict(files), quantize))
        yield from self.create_events

    def prune(self) -> dict:
        return {"removed": 3, "freed": 1_500_000}

    def verify(self) -> dict:
        return {"checked": 4, "corrupt": [], "missing": []}

    def close(self) -> None:
        pass


def answer_chunks(*pieces: str) -> list[dict]:
    """``/api/chat`` stream chunks for an answer made of ``pieces``, with a final timing chunk."""
    chunks = [{"message": {"role": "assistant", "content": p}, "done": False} for p in pieces]
    chunks.append(
        {
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_500_000_000,
            "load_duration": 20_000_000,
            "prompt_eval_count": 10,
            "prompt_eval_duration": 100_000_000,
            "eval_count": 50,
            "eval_duration": 1_000_000_000,
        }
    )
    return chunks
