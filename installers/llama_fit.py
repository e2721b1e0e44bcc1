"""Make sure the installed llama.cpp build runs on this computer; rebuild it when it does not.

llama-cpp-python compiles llama.cpp with ``-march=native``: whatever cpuid lists. Under some
hypervisors cpuid lists AMX (and AVX-512) while executing it traps, so ggml's AMX kernels kill
the first Q4_0/Q8_0 batch with SIGILL; a wheel pip cached on another computer can do the same.
So after an install the build is proved here (``python -m localllm.daemon.runners.selftest``: real
runners load tiny Q8_0 and Q4_0 models, decode a batch, generate and embed), and when a runner
dies by a signal it is rebuilt without the instruction sets it used that ggml has switches
for, one step at a time: AMX, then AVX-512, then the portable AVX2 baseline.

What was proved is remembered per computer (its CPU) and per build (a hash of its native
libraries) in ``localllm-llama-builds/`` inside pip's cache folder, beside the wheels built
for each step: whatever keeps pip's wheel cache keeps these too, a new virtual environment on
the same computer gets the build that worked in seconds, and a wheel that failed here is never
trusted here again (pip's own cache cannot tell builds apart: it keys wheels by version).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

__all__ = [
    "NATIVE",
    "Proof",
    "Record",
    "Step",
    "Toolbox",
    "build_cache",
    "climb",
    "ensure",
    "machine_key",
    "step_folder",
    "steps_after",
    "system_toolbox",
]

ROOT = Path(__file__).resolve().parents[1]
SELFTEST = "localllm.daemon.runners.selftest"
_NO_AMX = ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16")
_NO_AVX512 = ("-mno-avx512f",)  # every AVX-512 subset depends on it
Say = Callable[[str], None]


@dataclass(frozen=True)
class Step:
    """One build on the ladder: compiler flags taken away from ``-march=native``, or the
    portable baseline (``GGML_NATIVE=OFF``: AVX2, FMA, F16C on x86-64)."""

    name: str
    cflags: tuple[str, ...] = ()
    cmake_args: tuple[str, ...] = ()

    def describe(self) -> str:
        flags = " ".join(self.cmake_args + self.cflags)
        return f"{self.name} ({flags})" if flags else self.name


NATIVE = Step("native")
_STEPS = (
    Step("without AMX", _NO_AMX),
    Step("without AMX and AVX-512", _NO_AMX + _NO_AVX512),
    Step("portable", cmake_args=("-DGGML_NATIVE=OFF",)),  # x86-64: AVX2, FMA, F16C
)


def steps_after(features: list[str]) -> list[Step]:
    """The steps worth building once the native build died: those that take away a set it used
    (``features``, from its system info line), and always the portable one."""
    uses_amx = any(name.startswith("AMX") for name in features)
    uses_avx512 = any(name.startswith("AVX512") for name in features)
    wanted = {
        "without AMX": uses_amx,
        "without AMX and AVX-512": uses_avx512,
        "portable": True,
    }
    return [step for step in _STEPS if wanted[step.name]]


@dataclass(frozen=True)
class Proof:
    """What the self-test said of the installed build."""

    ok: bool
    exit_signal: str | None = None  # a runner killed by a signal: the build's fault here
    features: list[str] = field(default_factory=list)
    failed_step: str | None = None
    message: str | None = None

    def describe(self) -> str:
        if self.ok:
            return "passed its self-test (Q8_0 and Q4_0 models: a batch, generation, embeddings)"
        how = f"was killed by {self.exit_signal}" if self.exit_signal else "failed"
        return f"{how} in its self-test ({self.failed_step})"


@dataclass(frozen=True)
class Toolbox:
    """What ``ensure`` does to the world, so its decisions are tested without compiling."""

    identify: Callable[[], str | None]  # the installed build's key; None: not installed
    prove: Callable[[], Proof]
    wheel_folder: Callable[[Step], Path]  # where the wheel of a step is kept
    build_wheel: Callable[[Step], Path]  # compile a step's wheel into its folder
    install: Callable[[Path], None]


def ensure(box: Toolbox, record: Record, say: Say = print) -> Step | None:
    """Leave a build installed that passed the self-test here: the installed one if it passes,
    else a cached wheel that passed here, else the next step built and proved. Returns the
    step that runs (None: the installed build was proved here before); raises ``SystemExit``
    with the reason when no step runs."""
    installed = box.identify()
    if installed is None:
        raise SystemExit("llama_build: llama-cpp-python is not installed")
    if installed in record.passed:
        say(f"llama.cpp build: {record.passed[installed]}, proved on this computer before")
        return None
    if installed in record.failed:
        failure = record.failed[installed]
        say(f"llama.cpp build: the installed build {failure['why']} here before")
        return climb(box, record, steps_after(failure["features"]), say)
    proof = box.prove()
    if proof.ok:
        record.add_pass(installed, NATIVE.name)
        say(f"llama.cpp build: the installed build {proof.describe()}")
        return NATIVE
    _fail_on(proof, record, installed, "the installed build", say)
    return climb(box, record, steps_after(proof.features), say)


def climb(box: Toolbox, record: Record, steps: list[Step], say: Say = print) -> Step:
    """Install and prove ``steps`` in turn (a wheel from the cache, else built) until one
    passes; a native build that dies is followed by the steps that take away what it used."""
    queue = list(steps)
    while queue:
        step = queue.pop(0)
        wheel = next(iter(sorted(box.wheel_folder(step).glob("*.whl"))), None)
        if wheel is None:
            say(f"llama.cpp build: building {step.describe()}; this takes several minutes")
            wheel = box.build_wheel(step)
        box.install(wheel)
        key = box.identify() or wheel.name
        if key in record.passed:
            say(f"llama.cpp build: chose {step.describe()}, proved on this computer before")
            return step
        if key in record.failed:
            say(f"llama.cpp build: {step.name} {record.failed[key]['why']} here before")
            features = record.failed[key]["features"]
        else:
            proof = box.prove()
            if proof.ok:
                record.add_pass(key, step.name)
                say(f"llama.cpp build: chose {step.describe()}: it {proof.describe()}")
                return step
            _fail_on(proof, record, key, step.name, say)
            features = proof.features
        if step == NATIVE:
            queue = steps_after(features)
    raise SystemExit(
        "llama_build: no build of llama.cpp passed its self-test on this computer; "
        "see the messages above, and `localllm doctor`"
    )


def _fail_on(proof: Proof, record: Record, key: str, what: str, say: Say) -> None:
    """Remember a build killed by a signal; any other failure is not the CPU's and stops here."""
    if not proof.exit_signal:
        raise SystemExit(f"llama_build: {what} {proof.describe()}: {proof.message}")
    record.add_failure(key, proof.describe(), proof.features)
    say(f"llama.cpp build: {what} {proof.describe()}; it uses {', '.join(proof.features)}")


def step_folder(cache: Path, version: str, base_cmake: str, step: Step) -> Path:
    """Where the wheel of ``step`` is kept: one folder per version, backend flags and step."""
    flags = json.dumps([version, base_cmake, step.cmake_args, step.cflags])
    return cache / "wheels" / hashlib.sha256(flags.encode()).hexdigest()[:16]


class Record:
    """``records.json``: for each computer, the builds that passed and those killed here.

    The file sits in a cache anyone may edit, a disk may truncate and another version may have
    written: what cannot be read as a build passed or killed here is ignored with a warning
    (that build is proved again), never a crash of the install."""

    def __init__(self, path: Path, machine: str, say: Say = print):
        self._path, self._machine = path, machine
        everything, problem = _read(path)
        self.passed: dict[str, str] = {}
        self.failed: dict[str, dict] = {}  # why, features
        ignored = self._take(everything.get(machine, {}))
        if ignored and not problem:
            problem = f"has {ignored} entr{'y' if ignored == 1 else 'ies'} it cannot be read"
        if problem:
            say(
                f"llama.cpp build: warning: {path.name} {problem}; what it says is ignored "
                "and those builds are proved again"
            )

    def _take(self, mine: object) -> int:
        """Keep this computer's readable entries; returns how many were not."""
        if not isinstance(mine, dict):
            return 1
        passed, failed = mine.get("passed", {}), mine.get("failed", {})
        ignored = sum(not isinstance(part, dict) for part in (passed, failed))
        for key, step in passed.items() if isinstance(passed, dict) else ():
            if isinstance(step, str):
                self.passed[key] = step
            else:
                ignored += 1
        for key, failure in failed.items() if isinstance(failed, dict) else ():
            if _is_failure(failure):
                self.failed[key] = {"why": failure["why"], "features": failure["features"]}
            else:
                ignored += 1
        return ignored

    def forget(self) -> None:
        """Drop what was learned here (after a hypervisor or kernel update, say)."""
        self.passed.clear()
        self.failed.clear()
        self._save()

    def add_pass(self, key: str, step: str) -> None:
        self.passed[key] = step
        self._save()

    def add_failure(self, key: str, why: str, features: list[str]) -> None:
        self.failed[key] = {"why": why, "features": features}
        self._save()

    def _save(self) -> None:
        everything, _ = _read(self._path)  # other computers' entries are kept as they are
        everything[self._machine] = {"passed": self.passed, "failed": self.failed}
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        temporary.write_text(json.dumps(everything, indent=2) + "\n")
        os.replace(temporary, self._path)


def _read(path: Path) -> tuple[dict, str | None]:
    """The whole file as a dict, and why it could not be read (None: it could, or is not there)."""
    try:
        everything = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: [[[[...
        return {}, f"cannot be read ({type(error).__name__})"
    if not isinstance(everything, dict):
        return {}, "is not a JSON object"
    return everything, None


def _is_failure(value: object) -> bool:
    """Whether ``value`` is a build killed here as ``add_failure`` writes it."""
    if not isinstance(value, dict) or not isinstance(value.get("why"), str):
        return False
    features = value.get("features")
    return isinstance(features, list) and all(isinstance(name, str) for name in features)


def machine_key(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """This computer as builds see it: the OS, the architecture, the CPU and its flags."""
    parts = [platform.system(), platform.machine(), platform.processor()]
    try:
        text = cpuinfo.read_text(errors="replace").split("\n\n")[0]
        keep = ("vendor_id", "model name", "flags", "Features", "CPU implementer", "CPU part")
        parts += [line for line in text.splitlines() if line.split(":")[0].strip() in keep]
    except OSError:
        pass
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def build_cache(python: str = sys.executable, environ: Mapping[str, str] = os.environ) -> Path:
    """``localllm-llama-builds`` in pip's cache folder (``LOCALLLM_LLAMA_BUILDS`` overrides)."""
    if environ.get("LOCALLLM_LLAMA_BUILDS"):
        return Path(environ["LOCALLLM_LLAMA_BUILDS"])
    done = subprocess.run([python, "-m", "pip", "cache", "dir"], capture_output=True, text=True)
    pip_cache = done.stdout.strip() if done.returncode == 0 else ""
    return Path(pip_cache or Path.home() / ".cache" / "pip") / "localllm-llama-builds"


def system_toolbox(
    version: str, base_env: Mapping[str, str], cache: Path, python: str = sys.executable
) -> Toolbox:
    """The real thing: pip builds and installs wheels, the self-test runs in a child."""

    def wheel_folder(step: Step) -> Path:
        return step_folder(cache, version, base_env.get("CMAKE_ARGS", ""), step)

    def build_wheel(step: Step) -> Path:
        return _build_wheel(python, version, step, base_env, wheel_folder(step))

    def install(wheel: Path) -> None:
        pip = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall"]
        subprocess.run([*pip, str(wheel)], check=True)

    return Toolbox(_installed_key, lambda: prove(python), wheel_folder, build_wheel, install)


def prove(python: str = sys.executable, env: Mapping[str, str] | None = None) -> Proof:
    """Run the self-test in a child and read its report."""
    done = subprocess.run(
        [python, "-m", SELFTEST], cwd=ROOT, capture_output=True, text=True,
        env=None if env is None else dict(env), timeout=900,
    )  # fmt: skip
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (done.stderr or "").strip().splitlines()[-1:] or [f"status {done.returncode}"]
        return Proof(False, message=f"the self-test did not report: {tail[0]}")
    return Proof(
        bool(found["ok"]),
        found.get("exit_signal"),
        list(found.get("features") or ()),
        found.get("failed_step"),
        found.get("message"),
    )


def _installed_key() -> str | None:
    """A hash of the installed llama_cpp package's native libraries (found without importing
    it: loading a library built for another CPU is what may crash)."""
    spec = find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    digest = hashlib.sha256()
    for path in sorted(p for p in lib.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


def _build_wheel(
    python: str, version: str, step: Step, base_env: Mapping[str, str], target: Path
) -> Path:
    """Compile llama-cpp-python ``version`` for ``step`` into the folder ``target``."""
    with tempfile.TemporaryDirectory(prefix="llama-build-") as work:
        pip = [python, "-m", "pip"]
        sdist_args = ["download", "--no-deps", "--no-binary", ":all:", "-d", work]
        subprocess.run([*pip, *sdist_args, f"llama-cpp-python=={version}"], check=True)
        (sdist,) = Path(work).glob("llama_cpp_python-*.tar.gz")
        env = dict(base_env)
        env["CMAKE_ARGS"] = " ".join(filter(None, [env.get("CMAKE_ARGS", ""), *step.cmake_args]))
        for name in ("CFLAGS", "CXXFLAGS"):  # CMake starts CMAKE_C(XX)_FLAGS from these
            env[name] = " ".join(filter(None, [env.get(name, ""), *step.cflags]))
        out = Path(work) / "wheel"
        wheel_args = ["wheel", "--no-deps", "--no-cache-dir", "-w", str(out), str(sdist)]
        subprocess.run([*pip, *wheel_args], check=True, env=env)
        (built,) = out.glob("llama_cpp_python-*.whl")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        return Path(shutil.move(str(built), target / built.name))
