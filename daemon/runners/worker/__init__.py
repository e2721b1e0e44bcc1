"""The runner process: the only code in localllm that imports ``llama_cpp``.

Started by :class:`localllm.daemon.runners.process.RunnerProcess` as ``python -m
localllm.daemon.runners.worker``; it reads a :class:`~daemon.runners.types.RunnerSpec` as its first
frame on stdin, loads the model, and then serves the protocol of
:mod:`localllm.daemon.runners.protocol` on stdin/stdout. Logs go to stderr. Importing this package
imports nothing heavy; ``__main__`` does.
"""

__all__: list[str] = []
