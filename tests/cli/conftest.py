"""Fixtures for the CLI tests: a stand-in client and a way to run ``localllm`` in-process.

The end-to-end tests (``test_e2e_*.py``) run the real daemon instead.
"""

from __future__ import annotations

import io

import pytest

from localllm.app.cli.main import main
from tests.support.cli import FakeClient


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient()


@pytest.fixture
def cli_env(tmp_path) -> dict[str, str]:
    """An environment that keeps everything the CLI writes under ``tmp_path``."""
    return {
        "LOCALLLM_DATA": str(tmp_path / "data"),
        "LOCALLLM_CONFIG": str(tmp_path / "config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }


@pytest.fixture
def run_cli(fake, cli_env, capsys, monkeypatch):
    """``run_cli("list")`` runs ``localllm list`` against ``fake``; returns (status, out, err)."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")

    def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        status = main(list(argv), cli_env, client_factory=lambda settings: fake)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run
