"""A llama.cpp build that cannot run on this computer, for tests: with this folder on a runner's
PYTHONPATH, the runner (``python -m localllm.daemon.runners.worker``) kills itself the way such a
build dies, by a real signal from its own process. ``crash.json`` beside this file (written by the
test, see ``tests.support.crashing_build.crashing_build``) says how:

- ``{"signal": "SIGILL", "at": "batch"}``: at the first ``llama_decode`` of more than one token,
  where ggml's AMX tile kernels run (a one-token decode, like the warm-up, still works);
- ``{"signal": "SIGSEGV", "at": "import"}``: while the runner starts, before it loads a model;
- ``{"signal": "SIGSEGV", "at": "load", "spare": "selftest-"}``: when llama.cpp opens a model
  file whose name lacks ``spare`` (a model file that crashes llama.cpp, while the build's
  self-test, whose files are named so, runs).

Every other process (the daemon, the self-test, pytest) starts as usual.
"""

import json
import os
import signal
import sys
from pathlib import Path

_RUNNER = "localllm.daemon.runners.worker"


def _die(name: str) -> None:
    sys.stderr.flush()
    os.kill(os.getpid(), getattr(signal, name))


def _arm() -> None:
    if _RUNNER not in getattr(sys, "orig_argv", ()):
        return
    crash = json.loads((Path(__file__).with_name("crash.json")).read_text())
    if crash["at"] == "import":
        _die(crash["signal"])
    import llama_cpp

    decode, load = llama_cpp.llama_decode, llama_cpp.llama_model_load_from_file

    def decode_or_die(ctx, batch):
        if crash["at"] == "batch" and batch.n_tokens > 1:
            _die(crash["signal"])
        return decode(ctx, batch)

    def load_or_die(path, params):
        if crash["at"] == "load" and crash["spare"].encode() not in path:
            _die(crash["signal"])
        return load(path, params)

    llama_cpp.llama_decode = decode_or_die
    llama_cpp.llama_model_load_from_file = load_or_die


_arm()
