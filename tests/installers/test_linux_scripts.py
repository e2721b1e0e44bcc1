"""``installers/linux/install.sh`` and ``uninstall.sh`` on a stand-in bundle (no PyInstaller):
the files they write, the service they enable through a recording ``systemctl``, and what
they leave behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell scripts")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bundle(tmp_path) -> Path:
    """What build_bundle.py makes, minus the frozen program: a script standing in for it."""
    bundle = tmp_path / "dist" / "localllm"
    (bundle / "_internal" / "assets").mkdir(parents=True)
    shutil.copy(ROOT / "assets" / "app.svg", bundle / "_internal" / "assets" / "app.svg")
    program = bundle / "localllm"
    program.write_text('#!/bin/sh\necho "stand-in localllm $*"\n')
    program.chmod(0o755)
    shutil.copytree(ROOT / "installers" / "linux", bundle / "linux")
    return bundle


def fake_systemctl(tmp_path: Path, works: bool) -> tuple[Path, Path]:
    """A ``systemctl`` that logs its arguments; ``works=False`` acts like a container's."""
    log = tmp_path / "systemctl.log"
    script = tmp_path / "bin" / "systemctl"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexit {0 if works else 1}\n')
    script.chmod(0o755)
    return script, log


def run(script: Path, *args: str, home: Path, systemctl: Path, **env: str):
    base = {"PATH": os.environ["PATH"], "HOME": str(home), "SYSTEMCTL": str(systemctl)}
    return subprocess.run(
        ["sh", str(script), *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def installed_files(home: Path) -> dict[str, Path]:
    local = home / ".local"
    return {
        "lib": local / "lib" / "localllm",
        "bin": local / "bin" / "localllm",
        "desktop": local / "share" / "applications" / "localllm.desktop",
        "icon": local / "share" / "icons" / "hicolor" / "scalable" / "apps" / "localllm.svg",
        "unit": home / ".config" / "systemd" / "user" / "localllm.service",
    }


def test_install_enable_and_uninstall(bundle, tmp_path):
    home = tmp_path / "home"
    systemctl, log = fake_systemctl(tmp_path, works=True)
    store = tmp_path / "big disk" / "models"
    done = run(
        bundle / "linux" / "install.sh",
        home=home,
        systemctl=systemctl,
        LOCALLLM_HOST="127.0.0.1:8080",
        LOCALLLM_MODELS=str(store),
    )
    assert done.returncode == 0, done.stderr
    files = installed_files(home)
    assert all(path.exists() for path in files.values())
    assert files["bin"].is_symlink() and files["bin"].resolve() == files["lib"] / "localllm"
    assert subprocess.run([files["bin"], "--version"], capture_output=True, text=True).stdout == (
        "stand-in localllm --version\n"
    )
    lib = files["lib"]
    unit = files["unit"].read_text()
    assert f'ExecStart="{lib}/localllm" serve\n' in unit
    assert "Restart=on-failure\n" in unit and "WantedBy=default.target\n" in unit
    assert 'Environment="LOCALLLM_HOST=127.0.0.1:8080"\n' in unit
    assert f'Environment="LOCALLLM_MODELS={store}"\n' in unit
    desktop = files["desktop"].read_text()
    assert f'Exec="{lib}/localllm" app\n' in desktop and "Icon=localllm\n" in desktop
    assert files["icon"].read_bytes() == (ROOT / "assets" / "app.svg").read_bytes()
    assert log.read_text().splitlines() == [
        "--user show-environment",
        "--user stop localllm.service",
        "--user show-environment",
        "--user daemon-reload",
        "--user enable localllm.service",
        "--user restart localllm.service",
    ]
    assert "the daemon runs as a user service" in done.stdout

    (home / ".local" / "share" / "localllm" / "models").mkdir(parents=True)
    store.mkdir(parents=True)
    log.unlink()
    done = run(lib / "linux" / "uninstall.sh", home=home, systemctl=systemctl)
    assert done.returncode == 0, done.stderr
    assert not any(path.exists() or path.is_symlink() for path in files.values())
    assert "--user disable --now localllm.service" in log.read_text()
    assert (home / ".local" / "share" / "localllm" / "models").is_dir(), "models stay"
    assert f"kept the model store in {store}" in done.stdout


def test_without_user_systemd_the_service_is_installed_but_not_started(bundle, tmp_path):
    home = tmp_path / "home"
    systemctl, log = fake_systemctl(tmp_path, works=False)
    done = run(bundle / "linux" / "install.sh", home=home, systemctl=systemctl)
    assert done.returncode == 0, done.stderr
    assert "systemd user services are not available here" in done.stdout
    assert installed_files(home)["unit"].is_file()
    assert "Environment=" not in installed_files(home)["unit"].read_text()
    assert set(log.read_text().splitlines()) == {"--user show-environment"}


def test_no_enable_and_a_custom_prefix(bundle, tmp_path):
    home, prefix = tmp_path / "home", tmp_path / "opt"
    systemctl, log = fake_systemctl(tmp_path, works=True)
    args = ("--prefix", str(prefix), "--no-enable", "--bundle", str(bundle))
    done = run(ROOT / "installers" / "linux" / "install.sh", *args, home=home, systemctl=systemctl)
    assert done.returncode == 0, done.stderr
    assert (prefix / "lib" / "localllm" / "localllm").is_file()
    assert (prefix / "bin" / "localllm").is_symlink()
    assert "enable" not in log.read_text()
    done = run(
        ROOT / "installers" / "linux" / "uninstall.sh",
        "--prefix",
        str(prefix),
        home=home,
        systemctl=systemctl,
    )
    assert done.returncode == 0, done.stderr
    assert not (prefix / "lib" / "localllm").exists() and not (prefix / "bin" / "localllm").exists()


def test_purge_removes_models_settings_and_logs(bundle, tmp_path):
    home = tmp_path / "home"
    systemctl, _ = fake_systemctl(tmp_path, works=False)
    assert run(bundle / "linux" / "install.sh", home=home, systemctl=systemctl).returncode == 0
    data, config = home / ".local" / "share" / "localllm", home / ".config" / "localllm"
    (data / "models").mkdir(parents=True)
    config.mkdir(parents=True)
    uninstall = home / ".local" / "lib" / "localllm" / "linux" / "uninstall.sh"
    done = run(uninstall, "--purge", home=home, systemctl=systemctl)
    assert done.returncode == 0, done.stderr
    assert not data.exists() and not config.exists()


def test_refusals(bundle, tmp_path):
    home = tmp_path / "home"
    systemctl, _ = fake_systemctl(tmp_path, works=False)
    install = bundle / "linux" / "install.sh"
    spaced = run(install, "--prefix", str(tmp_path / "my apps"), home=home, systemctl=systemctl)
    assert spaced.returncode == 1 and "may not contain spaces" in spaced.stderr
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "localllm").write_text("#!/bin/sh\n# pip's console script\n")
    taken = run(install, home=home, systemctl=systemctl)
    assert taken.returncode == 1 and "is not ours" in taken.stderr
    not_a_bundle = run(install, "--bundle", str(tmp_path), home=home, systemctl=systemctl)
    assert not_a_bundle.returncode == 1 and "no localllm bundle" in not_a_bundle.stderr
