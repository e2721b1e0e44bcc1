"""Where the MCP servers the user added are kept: a 0600 JSON file, with each server's
environment (tokens) in the keyring, or a 0600 file of its own where there is no keyring."""

from __future__ import annotations

import json
import stat

import pytest

from localllm.app.gui.state.mcp_json import McpJsonError, servers_from_mcp_json
from localllm.app.tools.catalog import ToolSpec
from localllm.app.tools.config_store import FILE_NAME, McpSettings, McpSettingsStore
from localllm.app.tools.servers import ServerConfig
from localllm.model_registry.credentials import NO_KEYRING


class DictKeyring:
    """A keyring backend holding secrets in a dict (the system one is not under test)."""

    priority = 1

    def __init__(self):
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service, user):
        return self.secrets.get((service, user))

    def set_password(self, service, user, value):
        self.secrets[(service, user)] = value

    def delete_password(self, service, user):
        del self.secrets[(service, user)]


GITHUB = ServerConfig(
    "github", command="npx", args=("-y", "server-github"), env={"GITHUB_TOKEN": "ghp_secret"}
)
WEB = ServerConfig("web", url="http://127.0.0.1:9000/mcp", enabled=False)
SEARCH = ToolSpec("github", "search", schema={"type": "object"})


def test_servers_round_trip_with_the_token_in_the_keyring_not_the_file(tmp_path):
    keyring = DictKeyring()
    store = McpSettingsStore(tmp_path, keyring_backend=keyring)
    settings = McpSettings((GITHUB, WEB), require_call=True).allowing(GITHUB, SEARCH)
    store.save(settings)

    text = (tmp_path / FILE_NAME).read_text()
    assert "ghp_secret" not in text and "GITHUB_TOKEN" in text
    assert stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode) == 0o600
    assert ("localllm", "mcp-server-env:github") in keyring.secrets
    assert McpSettingsStore(tmp_path, keyring_backend=keyring).load() == settings

    store.save(settings.with_servers([WEB]))  # removing a server forgets its secret and trust
    assert keyring.secrets == {}
    assert store.load() == McpSettings((WEB,), require_call=True)


def test_without_a_keyring_the_token_goes_to_a_private_file_of_its_own(tmp_path):
    store = McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING)
    store.save(McpSettings((GITHUB,)))
    secret_files = [p for p in tmp_path.iterdir() if p.name.startswith("mcp-env-")]
    assert len(secret_files) == 1
    assert stat.S_IMODE(secret_files[0].stat().st_mode) == 0o600
    assert "ghp_secret" not in (tmp_path / FILE_NAME).read_text()
    assert store.load().server("github").env == {"GITHUB_TOKEN": "ghp_secret"}


def test_an_unreadable_file_is_set_aside_not_overwritten(tmp_path):
    (tmp_path / FILE_NAME).write_text("{not json")
    assert McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING).load() == McpSettings()
    assert (tmp_path / (FILE_NAME + ".unreadable")).read_text() == "{not json"
    assert json.loads(json.dumps(WEB.to_json()))["url"] == WEB.url


def test_a_pasted_mcp_json_whose_keys_make_one_name_is_refused_naming_both():
    """``a/b`` and ``a-b`` are both named ``a-b``: two servers of one name would share one
    secret and one set of approvals, so the paste is refused, not renamed behind the user."""
    pasted = {"mcpServers": {"a/b": {"command": "one"}, "x": {"url": "http://h/mcp"}}}
    pasted["mcpServers"]["a-b"] = {"command": "two"}
    with pytest.raises(McpJsonError) as refused:
        servers_from_mcp_json(json.dumps(pasted))
    assert str(refused.value) == (
        "'a/b' and 'a-b' would both be named 'a-b' (a name keeps letters, digits, spaces, '.', "
        "'_' and '-'): rename one of them."
    )
    del pasted["mcpServers"]["a-b"]
    assert [s.name for s in servers_from_mcp_json(json.dumps(pasted))] == ["a-b", "x"]
