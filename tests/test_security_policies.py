"""The rules behind the HTTP guards, table-driven (the guards themselves are tested end to end
against the real daemon in test_security_daemon.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from localllm.daemon.security.cors import OriginPolicy
from localllm.daemon.security.host_check import (
    host_name_of,
    is_local_host_name,
    is_loopback_address,
)
from localllm.daemon.security.keys import ApiKeyStore
from localllm.daemon.server.redaction import PathRedactor, redact_paths
from localllm.daemon.settings import Settings
from localllm.model_registry.credentials import IN_FILE


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("localhost:11435", "localhost"),
        ("LOCALHOST", "localhost"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("[::1]:11435", "[::1]"),
        ("[::1]", "[::1]"),
        ("evil.example:11435", "evil.example"),
        ("evil.example.", "evil.example"),
    ],
)
def test_host_header_parsing(header, name):
    assert host_name_of(header) == name


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.10", False),
        ("::", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses(address, loopback):
    assert is_loopback_address(address) is loopback


@pytest.mark.parametrize(
    ("name", "local"),
    [
        ("localhost", True),
        ("app.localhost", True),
        ("127.0.0.2", True),
        ("[::1]", True),
        ("evil.example", False),
        ("localhost.evil.example", False),
        ("", False),
    ],
)
def test_local_host_names(name, local):
    assert is_local_host_name(name) is local


def test_the_machine_name_is_not_a_loopback_host_name():
    """``<hostname>`` and ``<hostname>.local`` resolve through the LAN: rebindable."""
    import socket

    hostname = socket.gethostname().lower()
    for name in (hostname, f"{hostname}.local", hostname.split(".")[0]):
        assert not is_local_host_name(name)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:3000", True),
        ("http://127.0.0.1:8080", True),
        ("https://localhost", True),
        ("http://[::1]:5173", True),
        ("http://app.localhost:3000", True),
        ("app://-", False),
        ("http://evil.example", False),
        ("http://localhost.evil.example", False),
        ("http://127.0.0.1.evil.example", False),
        ("null", False),
        ("file://", False),
        ("https://chat.example.com", True),  # from LOCALLLM_ORIGINS below
        ("https://a.tools.example.org", True),
        ("https://tools.example.org.evil", False),
    ],
)
def test_origin_allowlist(origin, allowed):
    policy = OriginPolicy.from_settings(["https://chat.example.com", "https://*.tools.example.org"])
    assert policy.allows(origin) is allowed


def test_a_wildcard_origin_is_refused():
    with pytest.raises(ValueError, match="any web page"):
        OriginPolicy.from_settings(["*"])


def test_api_key_falls_back_to_a_private_file_without_a_keyring(tmp_path):
    keys = ApiKeyStore(tmp_path / "config", use_keyring=False)
    assert keys.load() is None
    key = keys.create()
    assert len(key) >= 32
    assert keys.create() == key  # stable
    assert stat.S_IMODE(keys.file.stat().st_mode) == 0o600
    assert keys.location == IN_FILE and "no system keyring" in IN_FILE


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("loaded 25 tensors from /home/ann/.localllm/blobs/sha256-1f", "from sha256-1f"),
        ('open "/Users/ann/My Models/x.gguf" failed', 'open "My Models/x.gguf" failed'),
        (r"file C:\Users\ann\models\x.gguf is bad", "file x.gguf is bad"),
        ("see https://huggingface.co/Qwen/Qwen2.5-GGUF/resolve/main/x.gguf", "Qwen/Qwen2.5-GGUF"),
        ("invalid model name '../../etc/x'", "'../../etc/x'"),
        ("repo Qwen/Qwen2.5 not found; 3/4 done", "repo Qwen/Qwen2.5 not found; 3/4 done"),
        ('"path": "/api/pull/resume"', '"path": "/api/pull/resume"'),  # our routes stay
        ("POST /v1/models/library/qwen", "POST /v1/models/library/qwen"),
    ],
)
def test_error_texts_lose_their_directories(text, redacted):
    out = redact_paths(text)
    assert redacted in out and "ann" not in out


def test_known_directories_are_replaced_whole_even_with_spaces():
    home = "/home/Ann Smith"
    settings = Settings(
        models_dir=Path(f"{home}/My Models"),
        data_dir=Path(f"{home}/.local/share/localllm"),
        log_dir=Path(f"{home}/.local/state/localllm/log"),
        config_dir=Path(f"{home}/.config/localllm"),
    )
    redact = PathRedactor.for_settings(settings, home=Path(home))
    cases = {
        f"loaded 25 tensors from {home}/My Models/blobs/sha256-1f": "from <models>/blobs/sha256-1f",
        f"open '{home}/.local/share/localllm/tmp/x.part' failed": "open '<data>/tmp/x.part' failed",
        f"see {home}/.local/state/localllm/log/daemon.log": "see <logs>/daemon.log",
        f"bad {home}/.config/localllm/hf_token": "bad <config>/hf_token",
        f'File "{home}/venv/lib/site.py", line 3': 'File "~/venv/lib/site.py", line 3',
        f"no {home}": "no ~",
    }
    for text, redacted in cases.items():
        out = redact(text)
        assert redacted in out and "Ann" not in out and "Smith" not in out, (text, out)
    assert redact("/home/Ann Smithers/notes/a.txt") != "~ers/notes/a.txt"  # not a prefix


def test_the_root_or_a_relative_directory_is_never_a_known_prefix():
    redact = PathRedactor.of([(Path("/"), "<root>"), (Path("models"), "<models>")])
    assert redact("models/x and /etc/y/z") == "models/x and z"
