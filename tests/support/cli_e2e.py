"""Running the real ``localllm`` command as a subprocess against a real daemon.

The end-to-end CLI tests use these with ``tests.support.daemon.Daemon``: the CLI reaches the
daemon through ``LOCALLLM_HOST`` as a user's would, and keeps its own files under a temporary
directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.support.daemon import ROOT
from tests.support.polling import wait_for

CLI = [sys.executable, "-m", "localllm.app.cli.main"]


def cli_env(tmp: Path, port: int, **extra: str) -> dict[str, str]:
    """The environment of a CLI process talking to the daemon on ``port``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALLLM_", "HF_"))}
    return {
        **base,
        "LOCALLLM_HOST": f"127.0.0.1:{port}",
        "LOCALLLM_DATA": str(tmp / "cli-data"),
        "LOCALLLM_CONFIG": str(tmp / "cli-config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def run_cli(
    args: list[str],
    env: Mapping[str, str],
    stdin: str = "",
    timeout: float = 120,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess:
    """``localllm ARGS``; from another ``cwd`` the project is found through PYTHONPATH."""
    return subprocess.run(
        [*CLI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)} if cwd != ROOT else dict(env),
        cwd=cwd,
        timeout=timeout,
    )


def daemon_pids(port: int) -> list[int]:
    """Processes running ``python -m localllm.daemon serve --host ...:<port>`` (read from /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"localllm.daemon" in argv
            and b"serve" in argv
            and any(arg.endswith(f":{port}".encode()) for arg in argv)
        ):
            found.append(int(cmdline.parent.name))
    return found


def stop_pids(pids: list[int], timeout: float = 15) -> None:
    """SIGTERM each process this test started, then SIGKILL what is left after ``timeout``."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    wait_for(lambda: not any(_alive(pid) for pid in pids), timeout, interval=0.1)
    for pid in pids:
        if _alive(pid):
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
