"""MCP servers run with the user's rights, so an "always allow" is for exactly what the user
approved: that tool, as its server is started (command line, environment, folder or URL) and
as it takes its arguments (its schema). A change of any of them asks again. A stdio server's
stderr log is bounded: it cannot fill the disk."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import pytest

from localllm.app.tools.catalog import ToolSpec
from localllm.app.tools.config_store import FILE_NAME, McpSettings, McpSettingsStore
from localllm.app.tools.host import McpHost
from localllm.app.tools.servers import ServerConfig
from localllm.model_registry.credentials import NO_KEYRING
from tests.support.mcp_servers import write_server
from tests.support.polling import wait_for

LOCAL = ServerConfig("files", command="npx", args=("-y", "server-files", "/home/me/notes"))
REMOTE = ServerConfig("web", url="https://tools.example.org/mcp")
READ = ToolSpec("files", "read", schema={"type": "object", "properties": {"path": {}}})
FETCH = ToolSpec("web", "fetch", schema={"type": "object", "properties": {"url": {}}})


def approved() -> McpSettings:
    return McpSettings((LOCAL, REMOTE)).allowing(LOCAL, READ).allowing(REMOTE, FETCH)


def test_an_approval_holds_for_what_was_approved():
    settings = approved()
    assert settings.is_allowed(LOCAL, READ) and settings.is_allowed(REMOTE, FETCH)
    assert not settings.is_allowed(LOCAL, replace(READ, name="write", schema=READ.schema))


@pytest.mark.parametrize(
    "changed",
    [
        replace(LOCAL, command="bash"),
        replace(LOCAL, args=("-y", "server-files", "/")),
        replace(LOCAL, cwd="/tmp"),
        replace(LOCAL, env={"NODE_OPTIONS": "--require /tmp/hook.js"}),
    ],
)
def test_a_changed_command_asks_again(changed):
    assert not approved().is_allowed(changed, READ)


def test_a_changed_environment_asks_again_and_its_values_stay_out_of_the_file(tmp_path):
    """Same command line, other code: ``NODE_OPTIONS=--require ...`` runs a script first."""
    server = replace(LOCAL, env={"GITHUB_TOKEN": "ghp_first"})
    store = McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING)
    store.save(McpSettings((server,)).allowing(server, READ))
    loaded = store.load()
    assert loaded.is_allowed(loaded.server("files"), READ)  # the environment read back
    hooked = replace(server, env={**server.env, "NODE_OPTIONS": "--require ./hook.js"})
    store.save(loaded.with_servers([hooked]))
    again = store.load()
    assert again.server("files").env == hooked.env
    assert not again.is_allowed(again.server("files"), READ)
    assert not again.is_allowed(replace(server, env={"GITHUB_TOKEN": "ghp_other"}), READ)
    assert "ghp_first" not in (tmp_path / FILE_NAME).read_text()


def test_a_changed_url_asks_again():
    assert not approved().is_allowed(replace(REMOTE, url="https://evil.example/mcp"), FETCH)


def test_a_changed_schema_asks_again():
    wider = replace(READ, schema={"type": "object", "properties": {"path": {}, "mode": {}}})
    assert not approved().is_allowed(LOCAL, wider)


def test_approvals_round_trip_and_old_ones_are_asked_again(tmp_path):
    store = McpSettingsStore(tmp_path, keyring_backend=NO_KEYRING)
    store.save(approved())
    assert store.load().is_allowed(LOCAL, READ)
    document = json.loads((tmp_path / FILE_NAME).read_text())
    document["allowed"].append(["files", "write"])  # an approval saved before fingerprints
    (tmp_path / FILE_NAME).write_text(json.dumps(document))
    assert store.load().allowed == approved().allowed


NOISY = (
    "import runpy, sys\n"
    "for _ in range(5000): sys.stderr.write('x' * 999 + '\\n')\n"
    "sys.stderr.write('the end of the noise\\n'); sys.stderr.flush()\n"
    "runpy.run_path(sys.argv[1], run_name='__main__')\n"
)


@pytest.mark.slow
def test_a_noisy_server_log_stays_bounded(tmp_path):
    """5 MB of stderr at start: the log keeps the last of it, within 1 MiB a file."""
    script = write_server(tmp_path / "server")
    logs = tmp_path / "logs"
    host = McpHost(start_timeout=60, call_timeout=20, log_dir=logs)
    try:
        server = ServerConfig("noisy", command=sys.executable, args=("-c", NOISY, str(script)))
        assert {tool.name for tool in host.tools(server)} >= {"note"}
        log = logs / "mcp-noisy.log"
        assert wait_for(lambda: b"the end of the noise" in log.read_bytes(), timeout=60)
    finally:
        host.close()
    older = logs / "mcp-noisy.log.1"
    assert log.stat().st_size <= 1 << 20 and older.stat().st_size <= 1 << 20
    assert log.stat().st_mode & 0o777 == 0o600
