"""``python installers/build_bundle.py [--out DIR]``: build the self-contained app for this OS.

PyInstaller (onedir: starts faster than onefile, which unpacks itself on every run) freezes
Python, the packages, llama-cpp-python's native libraries and Qt into ``DIR/localllm/``
(``DIR/localllm.app`` on macOS), from ``installers/localllm.spec``. The llama.cpp build that is
bundled is the one installed in this environment: choose it first with
``installers/llama_build.py --install`` (``--portable`` for other computers); the bundle's own
self-test must pass here before it is reported built. On Linux the desktop entry, systemd unit
and install/uninstall scripts go into the bundle's ``linux/`` folder, so the folder (or the
archive ``--archive`` makes of it) is all a user needs.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["BuildResult", "build", "main"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEC = HERE / "localllm.spec"
_ICON_SUFFIX = {"win32": ".ico", "darwin": ".icns"}


class BuildResult:
    """Where the bundle is, its executable, and what building it cost."""

    def __init__(self, bundle: Path, executable: Path, seconds: float):
        self.bundle = bundle
        self.executable = executable
        self.seconds = seconds
        self.size = sum(p.lstat().st_size for p in bundle.rglob("*") if not p.is_dir())


def build(out: Path, work: Path, *, quiet: bool = True) -> BuildResult:
    """Run PyInstaller on the spec; returns the bundle once its executable answers ``--version``."""
    _require_pyinstaller()
    started = time.monotonic()
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--distpath", str(out)]
    command += ["--workpath", str(work), *(["--log-level", "WARN"] if quiet else []), str(SPEC)]
    icon = _icon(work)
    if icon is not None:
        command += ["--", "--icon", str(icon)]
    subprocess.run(command, check=True, cwd=ROOT)
    bundle = out / ("localllm.app" if sys.platform == "darwin" else "localllm")
    executable = _executable(bundle)
    if sys.platform.startswith("linux"):
        _add_linux_files(bundle)
    subprocess.run([str(executable), "--version"], check=True, stdout=subprocess.DEVNULL)
    return BuildResult(bundle, executable, time.monotonic() - started)


def _require_pyinstaller() -> None:
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        raise SystemExit(
            "build_bundle: PyInstaller is not installed; run `pip install -e .[bundle]`"
        ) from None


def _icon(work: Path) -> Path | None:
    """The app icon in this platform's format, rendered from assets/app.svg (none on Linux)."""
    suffix = _ICON_SUFFIX.get(sys.platform)
    if suffix is None:
        return None
    icon = work / f"localllm{suffix}"
    render = [sys.executable, str(HERE / "icons.py"), str(ROOT / "assets" / "app.svg"), str(icon)]
    subprocess.run(render, check=True)
    return icon


def _executable(bundle: Path) -> Path:
    if sys.platform == "darwin":
        return bundle / "Contents" / "MacOS" / "localllm"
    return bundle / ("localllm.exe" if sys.platform == "win32" else "localllm")


def _add_linux_files(bundle: Path) -> None:
    target = bundle / "linux"
    target.mkdir(exist_ok=True)
    for path in (HERE / "linux").iterdir():
        shutil.copy2(path, target / path.name)


def _prove_llama(executable: Path) -> dict:
    """The bundled llama.cpp's self-test, run by the bundle itself: a bundle whose runners
    cannot run on the computer that built it is no bundle to ship. Returns its build report."""
    selftest = [str(executable), "-m", "localllm.daemon.runners.selftest"]
    done = subprocess.run(selftest, capture_output=True, text=True)
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        why = f"build_bundle: the bundle's self-test did not run:\n{done.stderr}"
        raise SystemExit(why) from None
    if not report["ok"]:
        raise SystemExit(
            f"build_bundle: the bundled llama.cpp failed its self-test ({report['failed_step']}): "
            f"{report['message']}\nRebuild llama-cpp-python (python installers/llama_build.py "
            "--install --portable), then build the bundle again"
        )
    return report["build"]


def _archive(bundle: Path) -> Path:
    from importlib.metadata import version

    machine = platform.machine().lower()
    name = f"localllm-{version('localllm')}-{sys.platform.rstrip('0123456789')}-{machine}"
    base = bundle.parent / name
    return Path(shutil.make_archive(str(base), "gztar", bundle.parent, bundle.name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python installers/build_bundle.py",
        description="Build the self-contained localllm app for this OS with PyInstaller.",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="default: dist/")
    parser.add_argument(
        "--work",
        type=Path,
        default=ROOT / "build" / "pyinstaller",
        help="default: build/pyinstaller/",
    )
    parser.add_argument("--archive", action="store_true", help="also pack it as a .tar.gz")
    parser.add_argument("--verbose", action="store_true", help="show PyInstaller's full log")
    args = parser.parse_args(argv)
    result = build(args.out.resolve(), args.work.resolve(), quiet=not args.verbose)
    llama = _prove_llama(result.executable)
    print(f"built {result.bundle} in {result.seconds:.0f} s, {result.size / 1e6:.0f} MB")
    print(f"llama-cpp-python {llama['llama_cpp_version']}, backend {llama['backend']}, "
          "passed its self-test here")  # fmt: skip
    print(f"  {llama['system_info']}")
    if args.archive:
        print(f"archive: {_archive(result.bundle)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
