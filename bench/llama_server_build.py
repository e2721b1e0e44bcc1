"""Build llama.cpp's own ``llama-server`` once, from the llama.cpp vendored in the
llama-cpp-python sdist that pyproject.toml pins, so bench/bench_vs_llama_server.py compares our
daemon with the very same inference code, compiled the same way (CPU, ``GGML_NATIVE=ON``,
Release, OpenMP and llamafile on: the llama-cpp-python build defaults).

    python bench/llama_server_build.py [--cache-dir DIR] [--jobs 2] [--force]

The build lives in ``~/.cache/localllm-bench/llama-server-<version>/`` (``--cache-dir`` or
``LOCALLLM_BENCH_CACHE`` change the parent), never in the repository. It is reused while the
binary exists and ``build-info.json`` names the sha256 of the same sdist. It prints the binary's
path. A first build takes several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE_ENV = "LOCALLLM_BENCH_CACHE"
PACKAGE = "llama-cpp-python"

# llama-cpp-python's CMakeLists builds vendor/llama.cpp with llama.cpp's defaults (GGML_NATIVE
# on, OpenMP on, shared libs) and scikit-build-core's Release; we add only what a lone server
# needs and switch off what would reach the network (curl, the UI download, OpenSSL).
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_NATIVE=ON",
)


def pinned_version() -> str:
    """The llama-cpp-python version pyproject.toml pins (``==``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"]:
        match = re.fullmatch(rf"{PACKAGE}\s*==\s*([\w.]+)", requirement.strip())
        if match:
            return match.group(1)
    raise RuntimeError(f"pyproject.toml does not pin {PACKAGE}")


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "localllm-bench")


def build_dir(version: str, cache_dir: Path | None = None) -> Path:
    return (cache_dir or default_cache_dir()) / f"llama-server-{version}"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(version: str, into: Path) -> Path:
    """The sdist, kept in ``into``; pip answers from its cache when it has it."""
    found = sorted(into.glob(f"llama_cpp_python-{version}.tar.gz"))
    if found:
        return found[0]
    into.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*pip, f"{PACKAGE}=={version}", "-d", str(into)], check=True)
    return next(into.glob(f"llama_cpp_python-{version}.tar.gz"))


def unpack(sdist: Path, into: Path) -> Path:
    """The vendored llama.cpp source tree of ``sdist``, unpacked afresh under ``into``."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    (top,) = into.iterdir()
    source = top / "vendor" / "llama.cpp"
    if not (source / "CMakeLists.txt").exists():
        raise RuntimeError(f"{sdist.name} has no vendor/llama.cpp")
    return source


def binary_path(version: str, cache_dir: Path | None = None) -> Path:
    return build_dir(version, cache_dir) / "build" / "bin" / "llama-server"


def cached_binary(version: str, cache_dir: Path | None = None) -> Path | None:
    """The built binary, if it exists and was built from the sdist now in the cache."""
    home = build_dir(version, cache_dir)
    binary, info_path = binary_path(version, cache_dir), home / "build-info.json"
    sdists = sorted((home / "sdist").glob(f"llama_cpp_python-{version}.tar.gz"))
    if not (binary.exists() and info_path.exists() and sdists):
        return None
    info = json.loads(info_path.read_text())
    return binary if info.get("sdist_sha256") == sha256(sdists[0]) else None


def build(version: str, cache_dir: Path | None = None, jobs: int = 2, force: bool = False) -> Path:
    """``llama-server`` for ``version``, built unless the cache already holds it."""
    if not force and (binary := cached_binary(version, cache_dir)):
        return binary
    home = build_dir(version, cache_dir)
    sdist = fetch_sdist(version, home / "sdist")
    digest = sha256(sdist)
    source = unpack(sdist, home / "src")
    out = home / "build"
    shutil.rmtree(out, ignore_errors=True)
    (home / "build-info.json").unlink(missing_ok=True)
    subprocess.run(["cmake", "-S", str(source), "-B", str(out), *CMAKE_FLAGS], check=True)
    subprocess.run(
        ["cmake", "--build", str(out), "--target", "llama-server", "-j", str(jobs)], check=True
    )
    binary = binary_path(version, cache_dir)
    info = {
        "package": PACKAGE,
        "version": version,
        "sdist": sdist.name,
        "sdist_sha256": digest,
        "cmake_flags": list(CMAKE_FLAGS),
        "binary": str(binary),
    }
    (home / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    return binary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, help=f"parent directory (env {CACHE_ENV})")
    parser.add_argument("--version", default=None, help="default: the one pyproject.toml pins")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = parser.parse_args()
    version = args.version or pinned_version()
    print(build(version, args.cache_dir, args.jobs, args.force))


if __name__ == "__main__":
    main()
