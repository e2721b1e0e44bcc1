"""``installers/macos/install-agent.sh`` with stand-ins for ``launchctl`` and ``plutil``: the
LaunchAgent it writes is a valid property list that runs ``localllm serve`` from the app."""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")

SCRIPT = Path(__file__).resolve().parents[2] / "installers" / "macos" / "install-agent.sh"


@pytest.fixture
def mac(tmp_path):
    """A home with localllm.app in ~/Applications and logging ``launchctl``/``plutil``."""
    home = tmp_path / "home"
    program = home / "Applications" / "localllm.app" / "Contents" / "MacOS" / "localllm"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    tools = tmp_path / "tools"
    tools.mkdir()
    log = tmp_path / "calls.log"
    for name in ("launchctl", "plutil"):
        (tools / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n')
        (tools / name).chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{tools}:{os.environ['PATH']}"}
    return home, program, log, env


def run(env, *args, **extra):
    return subprocess.run(
        ["sh", str(SCRIPT), *args], env={**env, **extra}, capture_output=True, text=True
    )


def test_the_agent_runs_the_daemon_from_the_app(mac):
    home, program, log, env = mac
    done = run(env, LOCALLLM_MODELS="/Volumes/Big Disk/models")
    assert done.returncode == 0, done.stderr
    plist_path = home / "Library" / "LaunchAgents" / "io.localllm.daemon.plist"
    agent = plistlib.loads(plist_path.read_bytes())
    assert agent["Label"] == "io.localllm.daemon"
    assert agent["ProgramArguments"] == [str(program), "serve"]
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}
    logs = home / "Library" / "Application Support" / "localllm" / "logs"
    assert agent["StandardErrorPath"] == str(logs / "daemon.log")
    assert agent["EnvironmentVariables"] == {"LOCALLLM_MODELS": "/Volumes/Big Disk/models"}
    link = home / ".local" / "bin" / "localllm"
    assert link.is_symlink() and link.resolve() == program
    uid = os.getuid()
    assert log.read_text().splitlines() == [
        f"plutil -lint {plist_path}",
        f"launchctl bootout gui/{uid}/io.localllm.daemon",
        f"launchctl bootstrap gui/{uid} {plist_path}",
    ]

    done = run(env, "--uninstall")
    assert done.returncode == 0, done.stderr
    assert not plist_path.exists() and not link.is_symlink()


def test_no_environment_section_without_settings_and_no_app_is_an_error(mac, tmp_path):
    home, _program, _log, env = mac
    assert run(env).returncode == 0
    plist = home / "Library" / "LaunchAgents" / "io.localllm.daemon.plist"
    assert "EnvironmentVariables" not in plistlib.loads(plist.read_bytes())
    missing = run(env, "--app", str(tmp_path / "nowhere.app"))
    assert missing.returncode == 1 and "has no Contents/MacOS/localllm" in missing.stderr
    bad = run(env, LOCALLLM_HOST="a&b")
    assert bad.returncode == 1 and "may not contain" in bad.stderr
