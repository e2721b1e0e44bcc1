"""The real Linux bundle: build it with PyInstaller, install it into a temporary home, start the
daemon the way its systemd unit does, import and run a model with the bundled CLI, open the
app headless, run the doctor, then uninstall.

Building takes about a minute on two cores, so the bundle is built once per session.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.daemon import free_port
from tests.support.polling import wait_for

pytestmark = [
    pytest.mark.slow,
    # The first test also builds the bundle: about a minute on 2 idle cores, over 7 with both
    # busy. These bound a hung build, not a slow one.
    pytest.mark.timeout(2400),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux bundle"),
]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bundle(tmp_path_factory) -> Path:
    pytest.importorskip("PyInstaller", reason="PyInstaller is not installed: pip install .[bundle]")
    root = tmp_path_factory.mktemp("bundle")
    command = [sys.executable, "installers/build_bundle.py", "--out", str(root / "dist")]
    command += ["--work", str(root / "work")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        pytest.fail(f"the bundle did not build:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return root / "dist" / "localllm"


def base_env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",  # Qt warns about anything else
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        **extra,
    }


def test_the_bundle_runs_by_itself(bundle):
    done = subprocess.run([bundle / "localllm", "--version"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "localllm 0.1.0\n")
    probe = subprocess.run(
        [bundle / "localllm", "-m", "localllm.daemon.runners.worker.probe"],
        capture_output=True,
        text=True,
    )
    build = json.loads(probe.stdout)
    assert build["llama_cpp_version"] == "0.3.36"
    assert Path(build["library_dir"]).is_relative_to(bundle), "llama.cpp comes from the bundle"
    assert (bundle / "linux" / "install.sh").is_file()


def test_install_serve_run_and_uninstall(bundle, tmp_path, tiny_model_path):
    home, work, store = tmp_path / "home", tmp_path / "work", tmp_path / "store"
    port = free_port()
    daemon_env = {"LOCALLLM_HOST": f"127.0.0.1:{port}", "LOCALLLM_MODELS": str(store)}
    files = {"LOCALLLM_DATA": "data", "LOCALLLM_CONFIG": "config", "LOCALLLM_LOGS": "logs"}
    env = base_env(home, **daemon_env, **{k: str(tmp_path / v) for k, v in files.items()})

    installed = install(bundle, home, daemon_env)
    command, unit_env = unit_command(installed["unit"].read_text())
    assert command == [str(installed["lib"] / "localllm"), "serve"]
    assert unit_env == daemon_env
    daemon = start(command, {**base_env(home), **env, **unit_env}, tmp_path / "daemon.log")
    try:
        wait_until_up(f"http://127.0.0.1:{port}", daemon, tmp_path / "daemon.log")
        cli = [str(installed["bin"])]  # the ~/.local/bin link, as a user runs it
        work.mkdir()
        (work / "tiny.gguf").symlink_to(tiny_model_path)
        (work / "Modelfile").write_text("FROM ./tiny.gguf\nPARAMETER num_predict 8\n")
        # --yes: the link leads outside the Modelfile's folder, which create asks about
        created = run([*cli, "create", "tiny", "-f", "Modelfile", "--yes"], env, cwd=work)
        assert created.returncode == 0, created.stderr
        answer = run([*cli, "run", "tiny", "Hello"], env, cwd=work)
        assert answer.returncode == 0, answer.stderr
        assert answer.stdout.strip()
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).json()
        assert [model["id"] for model in models["data"]] == ["tiny"]

        report = json.loads(run([*cli, "doctor", "--json"], env).stdout)
        assert report["ok"] and report["platform"].endswith("app bundle")
        assert report["daemon"]["running"] and report["llama"]["version"] == "0.3.36"
        assert Path(report["llama"]["library_dir"]).is_relative_to(installed["lib"])

        app_command = desktop_command(installed["desktop"].read_text())
        app_error = app_runs_headless(app_command, env, tmp_path / "daemon.log")
    finally:
        stop(daemon)
        stop_leftovers(installed["lib"])

    uninstall = run(["sh", str(installed["lib"] / "linux" / "uninstall.sh")], base_env(home))
    assert uninstall.returncode == 0, uninstall.stderr
    assert not [name for name, path in installed.items() if path.exists() or path.is_symlink()]
    assert (store / "manifests").is_dir(), "models stay without --purge"
    assert app_error is None, app_error


# -- steps ----------------------------------------------------------------------------------


def install(bundle: Path, home: Path, daemon_env: dict[str, str]) -> dict[str, Path]:
    """install.sh into ``home``, with a ``systemctl`` that fails as it does in containers."""
    fake = home.parent / "no-systemd"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    done = run(
        ["sh", str(bundle / "linux" / "install.sh")],
        base_env(home, SYSTEMCTL=str(fake), **daemon_env),
    )
    assert done.returncode == 0, done.stderr
    assert "systemd user services are not available here" in done.stdout
    local = home / ".local"
    paths = {
        "lib": local / "lib" / "localllm",
        "bin": local / "bin" / "localllm",
        "desktop": local / "share" / "applications" / "localllm.desktop",
        "icon": local / "share" / "icons" / "hicolor" / "scalable" / "apps" / "localllm.svg",
        "unit": home / ".config" / "systemd" / "user" / "localllm.service",
    }
    assert [name for name, path in paths.items() if not path.exists()] == []
    return paths


def unit_command(unit: str) -> tuple[list[str], dict[str, str]]:
    """ExecStart's command line and the Environment= settings of a systemd unit."""
    command, env = [], {}
    for line in unit.splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            command = shlex.split(value)
        elif key == "Environment":
            name, _, setting = shlex.split(value)[0].partition("=")
            env[name] = setting
    return command, env


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, env={**env, "LOCALLLM_NUM_THREADS": "1"}, stdout=out, stderr=out
        )


def wait_until_up(url: str, process: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    def answers() -> bool:
        assert process.poll() is None, f"the daemon exited:\n{log.read_text()}"
        try:
            return httpx.get(url + "/", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    if not wait_for(answers, timeout, interval=0.2):
        pytest.fail(f"the daemon did not answer:\n{log.read_text()}")


def desktop_command(entry: str) -> list[str]:
    """The Exec= command line of a .desktop file (no field codes in ours)."""
    return shlex.split(next(line[5:] for line in entry.splitlines() if line.startswith("Exec=")))


def app_runs_headless(command: list[str], env: dict[str, str], daemon_log: Path) -> str | None:
    """Start the desktop app as its menu entry does (Qt and its plugins load from the bundle);
    None once it is up (still running when the daemon has logged requests from it: the app
    tags them with its User-Agent), else what went wrong."""
    app = subprocess.Popen(
        command,
        env={**env, "QT_QPA_PLATFORM": "offscreen"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def asked() -> int:
        return daemon_log.read_text().count('"user_agent": "localllm-app/')

    try:
        wait_for(lambda: app.poll() is not None or asked() >= 2, timeout=120, interval=0.2)
        running, talked = app.poll() is None, asked() >= 2
    finally:
        if app.poll() is None:
            app.terminate()
        _out, err = app.communicate(timeout=60)
    if not running:
        return f"the app exited ({app.returncode}): {err.strip()}"
    return None if talked else f"the app never asked the daemon anything: {err.strip()}"


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_leftovers(install_dir: Path) -> None:
    """Kill what still runs from this test's install (a runner whose daemon died, say)."""
    for exe in Path("/proc").glob("[0-9]*/exe"):
        try:
            if Path(os.readlink(exe)).is_relative_to(install_dir):
                os.kill(int(exe.parent.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue
