"""Remotes: engines elsewhere (vLLM, SGLang, TGI, llama-server, Ollama, another localllm) whose
models the daemon serves next to its own, under ``NAME/<model id>``.

``config`` keeps the list (the remotes file), ``keys`` their API keys, ``replicas`` the health
and load of each URL, ``catalog`` the cached model lists and the background checks,
``generation`` turns a job into a stream from a remote, and ``Remotes`` ties them together.
"""

from localllm.daemon.remotes.config import RemoteConfig
from localllm.daemon.remotes.registry import RemoteMatch, Remotes

__all__ = ["RemoteConfig", "RemoteMatch", "Remotes"]
