"""``localllm --help`` and every command's help are complete: a description and examples."""

from __future__ import annotations

import pytest

from localllm.app.cli.main import build_parser, main

COMMANDS = [
    "run", "pull", "pulls", "list", "show", "cp", "rm", "ps", "stop", "create",
    "prune", "verify", "login", "logout", "key", "serve", "doctor",
]  # fmt: skip


def test_top_level_help_lists_every_command_and_the_environment(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    out = capsys.readouterr().out
    assert caught.value.code == 0
    for command in [*COMMANDS, "app", "list (ls)"]:
        assert f"\n    {command} " in out, command
    for variable in (
        "LOCALLLM_HOST", "LOCALLLM_MODELS", "LOCALLLM_KEEP_ALIVE", "LOCALLLM_MAX_LOADED_MODELS",
        "LOCALLLM_MAX_QUEUE", "LOCALLLM_NUM_PARALLEL", "LOCALLLM_MAX_PULLS",
        "LOCALLLM_CONTEXT_LENGTH", "LOCALLLM_CONTEXT_CAP", "LOCALLLM_KV_CACHE_TYPE",
        "LOCALLLM_FLASH_ATTENTION", "LOCALLLM_BACKEND_SAMPLING", "LOCALLLM_HOST_CACHE_MB",
        "LOCALLLM_ORIGINS", "LOCALLLM_API_KEY", "LOCALLLM_CATALOG", "HF_TOKEN", "HF_ENDPOINT",
    ):  # fmt: skip
        assert f"\n  {variable} " in out, variable


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_a_description_and_examples(command, capsys):
    with pytest.raises(SystemExit) as caught:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert caught.value.code == 0
    assert out.startswith(f"usage: localllm {command}")
    description = out.split("\n\n")[1]
    assert len(description) > 30
    if command != "doctor":
        assert "\nexamples:\n  localllm " in out or "\nexamples:\n  " in out


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: localllm" in capsys.readouterr().out


def test_unknown_options_are_refused(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["list", "--bogus"])
    assert caught.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert capsys.readouterr().out.startswith("localllm ")
