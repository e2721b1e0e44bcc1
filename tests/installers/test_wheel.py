"""The wheel installs one namespace, ``localllm``: installed beside python-daemon (import name
``daemon``) both import, each its own, and the package data comes with ours."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS, FILES = ("app", "daemon", "model_registry"), ("pyproject.toml", "setup.py", "README.md")
NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc")

pytestmark = pytest.mark.slow

# Run with -S (no site: the editable install's import hook stays out) and -I (no cwd, no
# PYTHONPATH), so only the wheel's files and the environment's plain packages are importable.
PROBE = """
import json, sys
sys.path[:0] = sys.argv[1:]
import daemon, daemon.daemon
import localllm.app.cli.main, localllm.daemon.server.app, localllm.model_registry.pull.catalog
from importlib import resources
catalog = resources.files("localllm.model_registry").joinpath("catalog.json").read_bytes()
print(json.dumps({
    "python_daemon": daemon.__file__,
    "context": hasattr(daemon.daemon, "DaemonContext"),
    "ours": localllm.daemon.__file__,
    "catalog": len(catalog),
    "tops": sorted(n for n in sys.modules if n in ("app", "model_registry")),
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    # from a copy: setuptools writes build/ and localllm.egg-info where it builds, which the
    # bundle's build, in the other test process, reads from the checkout at the same time
    source = work / "source"
    for name in FOLDERS:
        shutil.copytree(ROOT / name, source / name, ignore=NOT_SOURCE)
    for name in FILES:
        shutil.copy2(ROOT / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "--wheel-dir", str(work / "dist"), str(source)], check=True)
    (wheel,) = (work / "dist").glob("localllm-*.whl")
    target = work / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"]
    subprocess.run([*install, "--target", str(target), str(wheel)], check=True)
    return target


def test_the_wheel_holds_one_namespace(installed):
    tops = {path.name for path in installed.iterdir() if not path.name.endswith(".dist-info")}
    assert tops - {"bin"} == {"localllm"}
    assert {path.name for path in (installed / "localllm").iterdir()} == {
        "app",
        "daemon",
        "model_registry",
    }


def test_it_imports_beside_python_daemon(installed):
    plain_packages = sysconfig.get_paths()["purelib"]  # python-daemon, and our dependencies
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", PROBE, str(installed), plain_packages],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert Path(found["python_daemon"]).is_relative_to(plain_packages)
    assert found["context"]
    assert Path(found["ours"]).is_relative_to(installed / "localllm")
    assert found["catalog"] > 0
    assert found["tops"] == []
