"""Helpers for end-to-end tests: a real daemon (``python -m localllm.daemon serve``) in a
subprocess on
a free loopback port, with its own temporary store of generated tiny models."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import httpx

from tests.support.polling import wait_for
from tests.support.processes import child_pids

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_store(root: Path, models: Mapping[str, Path | tuple[Path, object]]) -> Path:
    """A store at ``root`` holding each GGUF under its name, optionally with ``ModelExtras``
    (SYSTEM, TEMPLATE, ...), imported as ``localllm create`` would."""
    from localllm.model_registry.importer import ModelExtras, import_gguf
    from localllm.model_registry.store import Store

    store = Store(root)
    for name, source in models.items():
        path, extras = source if isinstance(source, tuple) else (source, ModelExtras())
        import_gguf(store, name, path, extras=extras)
    return root


def launcher_env(monkeypatch, root: Path, **extra: str) -> None:
    """The environment a daemon that ``ensure_daemon`` starts inherits: every folder under
    ``root``, a free port, one runner thread, none of the test run's own ``LOCALLLM_*``."""
    for key in [key for key in os.environ if key.startswith("LOCALLLM_")]:
        monkeypatch.delenv(key)
    for key, value in {
        "LOCALLLM_HOST": f"127.0.0.1:{free_port()}",
        "LOCALLLM_DATA": str(root / "data"),
        "LOCALLLM_MODELS": str(root / "models"),
        "LOCALLLM_LOGS": str(root / "logs"),
        "LOCALLLM_CONFIG": str(root / "config"),
        "LOCALLLM_NUM_THREADS": "1",
        **extra,
    }.items():
        monkeypatch.setenv(key, value)


def upload(client, path: Path) -> str:
    """Send ``path`` as a blob with a ``daemon.client.Client``, as ``localllm create`` does
    for a Modelfile's files; its digest, for the ``files`` of ``/api/create``."""
    digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    client.upload_blob(path, digest)
    return digest


class Daemon:
    """A running daemon; use as a context manager, or call ``stop()``."""

    def __init__(self, store_dir: Path, log_dir: Path, env: Mapping[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / "daemon.log"
        log_dir.mkdir(parents=True, exist_ok=True)
        full_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("LOCALLLM_")},
            "LOCALLLM_MODELS": str(store_dir),
            "LOCALLLM_LOGS": str(log_dir),
            "LOCALLLM_DATA": str(log_dir / "data"),  # pull list, temp files: never the user's
            "LOCALLLM_CONFIG": str(log_dir / "config"),  # its admin token: never the user's
            "LOCALLLM_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.config_dir = Path(full_env["LOCALLLM_CONFIG"])
        self._log = self.log_path.open("ab")  # O_APPEND: a test may add lines too
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localllm.daemon", "serve", "--host", f"127.0.0.1:{self.port}"],
            cwd=ROOT,
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        if not wait_for(self._answers, timeout, interval=0.1):
            self.stop()
            raise RuntimeError(f"daemon did not start:\n{self.log()}")

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"daemon exited early:\n{self.log()}")
        try:
            return httpx.get(self.url + "/", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def openai(self, **kwargs):
        from openai import OpenAI

        return OpenAI(base_url=self.url + "/v1", api_key="unused", max_retries=0, **kwargs)

    def metrics(self) -> str:
        return httpx.get(self.url + "/metrics", timeout=10).text

    def runner_pids(self) -> list[int]:
        """Child processes of the daemon (its runners), from /proc."""
        return child_pids(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def metric_value(text: str, name: str, **labels: str) -> float:
    """One sample from Prometheus text, labels in any order (0.0 when absent)."""
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        metric, _, rest = sample.partition("{")
        if metric == name and set(filter(None, rest.rstrip("}").split(","))) == wanted:
            return float(value)
    return 0.0
