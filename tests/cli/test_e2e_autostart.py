"""Commands start the daemon when nothing answers on a loopback address, and only then."""

from __future__ import annotations

import sys

import pytest

from tests.support.cli_e2e import cli_env, daemon_pids, run_cli, stop_pids
from tests.support.daemon import free_port

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the daemon in /proc")
def test_list_starts_the_daemon_in_the_background(tmp_path):
    port = free_port()
    env = cli_env(
        tmp_path,
        port,
        LOCALLLM_MODELS=str(tmp_path / "models"),
        LOCALLLM_LOGS=str(tmp_path / "logs"),
        LOCALLLM_NUM_THREADS="1",
    )
    try:
        first = run_cli(["list"], env, timeout=90)
        assert first.returncode == 0, first.stderr
        assert "starting the localllm daemon" in first.stderr
        assert first.stdout.split() == ["NAME", "ID", "SIZE", "MODIFIED"]
        pids = daemon_pids(port)
        assert len(pids) == 1  # it outlived the command that started it
        second = run_cli(["list"], env)
        assert second.returncode == 0 and "starting" not in second.stderr
        assert daemon_pids(port) == pids
        assert (tmp_path / "logs" / "daemon.log").exists()
    finally:
        stop_pids(daemon_pids(port))


def test_a_network_address_is_not_started_and_the_error_is_one_line(tmp_path):
    port = free_port()
    env = cli_env(tmp_path, port, LOCALLLM_HOST=f"0.0.0.0:{port}")
    result = run_cli(["list"], env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    expected = f"Error: the daemon at http://127.0.0.1:{port} is not reachable"
    assert result.stderr.startswith(expected)
    assert daemon_pids(port) == []


def test_login_and_key_need_no_daemon(tmp_path):
    port = free_port()
    env = cli_env(tmp_path, port)
    assert run_cli(["key", "-q"], env).stdout.strip()
    assert run_cli(["login"], env, stdin="hf_abc\n").returncode == 0
    assert daemon_pids(port) == []
