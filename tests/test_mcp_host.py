"""The MCP host against real servers: the SDK's own server as a stdio subprocess and over
streamable HTTP on 127.0.0.1. Tools are listed with their schemas, called for real (the server
records each call), and every way a server can fail comes back as an error, in time."""

from __future__ import annotations

import sys

import pytest

from localllm.app.tools.catalog import ToolCatalog, ToolSpec, required_call_format
from localllm.app.tools.host import McpHost, ToolError
from localllm.app.tools.servers import ServerConfig, ServerConfigError
from tests.support.mcp_servers import calls, http_server, write_server

pytestmark = pytest.mark.slow


@pytest.fixture()
def script(tmp_path):
    return write_server(tmp_path / "server")


@pytest.fixture()
def host():
    running = McpHost(start_timeout=60, call_timeout=20)
    yield running
    running.close()


def stdio(script, name="notes") -> ServerConfig:
    return ServerConfig(name, command=sys.executable, args=(str(script),))


def test_stdio_tools_are_listed_with_their_schemas_and_run_for_real(host, script):
    server = stdio(script)
    tools = {t.name: t for t in host.tools(server)}
    assert {"note", "big", "fail", "crash", "hang"} <= set(tools)
    assert tools["note"].description == "Write a note down."
    assert tools["note"].schema["properties"]["text"]["type"] == "string"

    result = host.call(server, "note", {"text": "buy milk"})
    assert result.text == "noted: buy milk" and not result.is_error
    assert calls(script) == [{"tool": "note", "text": "buy milk"}]
    assert host.running("notes")  # kept for the next call, not started again


def test_http_server_tools_are_listed_and_called(host, script):
    with http_server(script) as url:
        server = ServerConfig("web notes", url=url)
        assert "note" in {t.name for t in host.tools(server)}
        assert host.call(server, "note", {"text": "over http"}).text == "noted: over http"
    assert calls(script) == [{"tool": "note", "text": "over http"}]


def test_an_sse_server_is_reached_at_its_sse_url(host, script):
    with http_server(script, "sse") as url:
        server = ServerConfig("old web", url=url)
        assert host.call(server, "note", {"text": "over sse"}).text == "noted: over sse"
    assert calls(script) == [{"tool": "note", "text": "over sse"}]


def test_a_tool_error_is_a_result_marked_as_an_error(host, script):
    result = host.call(stdio(script), "fail", {"reason": "testing"})
    assert result.is_error and "Error executing tool fail" in result.text


def test_a_long_result_is_cut_before_it_reaches_the_prompt(script):
    small = McpHost(start_timeout=60, call_timeout=20, result_limit=100)
    try:
        text = small.call(stdio(script), "big", {"size": 5000}).text
    finally:
        small.close()
    assert text.startswith("x" * 100) and "cut: 4900 more characters" in text
    assert len(text) < 200


def test_a_server_that_cannot_start_is_an_error(host, tmp_path):
    missing = ServerConfig("ghost", command=str(tmp_path / "no-such-program"))
    with pytest.raises(ToolError, match="ghost could not start"):
        host.tools(missing)


def test_a_crashing_server_is_an_error_and_starts_afresh_next_time(host, script):
    server = stdio(script)
    host.tools(server)
    with pytest.raises(ToolError, match="notes"):
        host.call(server, "crash", {})
    assert host.call(server, "note", {"text": "after the crash"}).text.startswith("noted")


def test_a_hanging_tool_times_out(script):
    quick = McpHost(start_timeout=60, call_timeout=2)
    try:
        server = stdio(script)
        quick.tools(server)
        with pytest.raises(ToolError, match="did not answer within 2 s"):  # the tool never does
            quick.call(server, "hang", {})
    finally:
        quick.close()


def test_names_from_several_servers_cannot_collide():
    catalog = ToolCatalog(
        [
            ToolSpec("files", "read"),
            ToolSpec("web", "read"),
            ToolSpec("files!", "read"),  # folds to the same name as "files"
        ]
    )
    assert [t.qualified for t in catalog] == ["files__read", "web__read", "files__read_2"]
    assert catalog.get("files__read_2").server == "files!"
    schema = required_call_format(catalog)
    assert [o["properties"]["name"]["const"] for o in schema["oneOf"]] == [
        "files__read",
        "web__read",
        "files__read_2",
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "x"}, "either a command or a URL"),
        ({"name": "x", "command": "a", "url": "http://h"}, "either a command or a URL"),
        ({"name": "x", "url": "file:///etc"}, "must start with http"),
        ({"name": "", "command": "a"}, "server name is"),
        ({"name": "x", "command": "a", "env": {"1A": "v"}}, "not an environment variable"),
    ],
)
def test_bad_server_entries_are_refused_with_what_is_allowed(fields, message):
    with pytest.raises(ServerConfigError, match=message):
        ServerConfig(**fields)
