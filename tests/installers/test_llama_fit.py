"""``installers/llama_fit.py``: a llama.cpp build is kept only when it passed its self-test on
this computer; one whose runner dies by a signal is replaced by the next build that leaves out
what it used (AMX, then AVX-512, then the portable baseline), and remembered so.

The builds here are stand-ins (compiling one takes minutes), but the proof is real: the build's
self-test runs in a child, and on a "computer" where a set traps its runners really die by
SIGILL at their first batch decode (``tests/support/crashing_build``); the features each build
claims are those a build compiled with its flags on a Sapphire Rapids machine would report.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.crashing_build import crashing_build

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "installers"))
import llama_fit  # noqa: E402

pytestmark = pytest.mark.slow

NATIVE_FEATURES = ["SSE3", "AVX", "AVX2", "FMA", "AVX512", "AVX512_VNNI", "AMX_INT8", "REPACK"]


class Computer:
    """Installs stand-in wheels; a build that still uses a set in ``traps`` dies by SIGILL in
    its self-test. ``installed`` starts as the wheel pip built natively (or took from its cache)."""

    def __init__(self, tmp: Path, traps: set[str], cache: Path):
        self.cache, self.traps = cache, traps
        self.env = crashing_build(tmp / "hook", "SIGILL", "batch")
        self.hook = tmp / "hook" / "crash.json"
        self.installed_flags: tuple[str, ...] = ()
        self.installed = "pip-native-wheel"
        self.built: list[str] = []
        self.proofs = 0
        self._arm()

    def features(self) -> list[str]:
        gone = set()
        if "-mno-amx-int8" in self.installed_flags:
            gone |= {"AMX_INT8"}
        if "-mno-avx512f" in self.installed_flags:
            gone |= {"AVX512", "AVX512_VNNI"}
        return [name for name in NATIVE_FEATURES if name not in gone]

    def _arm(self) -> None:
        trapping = self.traps & set(self.features())
        self.hook.write_text(json.dumps({"signal": "SIGILL", "at": "batch" if trapping else "-"}))

    def prove(self) -> llama_fit.Proof:
        self.proofs += 1
        return replace(llama_fit.prove(env=self.env), features=self.features())

    def wheel_folder(self, step: llama_fit.Step) -> Path:
        return llama_fit.step_folder(self.cache, "0.3.36", "", step)

    def build_wheel(self, step: llama_fit.Step) -> Path:
        self.built.append(step.name)
        folder = self.wheel_folder(step)
        folder.mkdir(parents=True)
        wheel = folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
        wheel.write_text(json.dumps(step.cflags))
        return wheel

    def install(self, wheel: Path) -> None:
        self.installed_flags = tuple(json.loads(wheel.read_text()))
        self.installed = f"build{self.installed_flags}"
        self._arm()

    def toolbox(self) -> llama_fit.Toolbox:
        return llama_fit.Toolbox(
            lambda: self.installed, self.prove, self.wheel_folder, self.build_wheel, self.install
        )


def record(cache: Path) -> llama_fit.Record:
    return llama_fit.Record(cache / "records.json", "this-computer")


def test_the_steps_leave_out_only_what_the_failed_build_used():
    names = [step.name for step in llama_fit.steps_after(NATIVE_FEATURES)]
    assert names == ["without AMX", "without AMX and AVX-512", "portable"]
    assert [step.name for step in llama_fit.steps_after(["AVX2", "FMA"])] == ["portable"]
    no_amx, no_avx512, portable = llama_fit.steps_after(NATIVE_FEATURES)
    assert no_amx.cflags == ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16")
    assert no_avx512.cflags == (*no_amx.cflags, "-mno-avx512f")
    assert portable.cmake_args == ("-DGGML_NATIVE=OFF",) and portable.cflags == ()


def test_a_build_that_passes_is_kept_and_remembered(tmp_path):
    computer = Computer(tmp_path, traps=set(), cache=tmp_path / "cache")
    said = []
    assert llama_fit.ensure(computer.toolbox(), record(computer.cache), said.append) is not None
    assert computer.built == [] and computer.proofs == 1
    assert record(computer.cache).passed == {"pip-native-wheel": "native"}
    assert said[-1].startswith("llama.cpp build: the installed build passed its self-test")
    assert llama_fit.ensure(computer.toolbox(), record(computer.cache), said.append) is None
    assert computer.proofs == 1 and "proved on this computer before" in said[-1]


def test_a_build_whose_amx_traps_is_rebuilt_without_amx(tmp_path):
    computer = Computer(tmp_path, traps={"AMX_INT8"}, cache=tmp_path / "cache")
    said = []
    chosen = llama_fit.ensure(computer.toolbox(), record(computer.cache), said.append)
    assert chosen.name == "without AMX" and computer.built == ["without AMX"]
    assert "-mno-amx-int8" in computer.installed_flags
    assert "-mno-avx512f" not in computer.installed_flags  # AVX-512 kept: it works here
    found = record(computer.cache)
    assert found.failed["pip-native-wheel"]["why"] == (
        "was killed by SIGILL in its self-test "
        "(Q8_0: reading two prompts in one batch and generating)"
    )
    assert list(found.passed.values()) == ["without AMX"]
    assert any("the installed build was killed by SIGILL" in line for line in said)
    assert said[-1].startswith("llama.cpp build: chose without AMX (-mno-amx-tile")

    # A fresh virtual environment gets pip's cached native wheel again: it is never proved
    # (nor crashes) here again; the remembered build is installed without compiling.
    fresh = Computer(tmp_path / "fresh", traps={"AMX_INT8"}, cache=computer.cache)
    again = llama_fit.ensure(fresh.toolbox(), record(fresh.cache), said.append)
    assert again.name == "without AMX"
    assert (fresh.built, fresh.proofs) == ([], 0)
    assert "-mno-amx-int8" in fresh.installed_flags


def test_when_avx512_traps_too_each_step_is_tried_in_turn(tmp_path):
    computer = Computer(tmp_path, traps={"AMX_INT8", "AVX512"}, cache=tmp_path / "cache")
    chosen = llama_fit.ensure(computer.toolbox(), record(computer.cache), lambda _: None)
    assert chosen.name == "without AMX and AVX-512"
    assert computer.built == ["without AMX", "without AMX and AVX-512"]
    assert {"-mno-amx-int8", "-mno-avx512f"} <= set(computer.installed_flags)
    assert len(record(computer.cache).failed) == 2


def test_install_starts_from_the_native_build_and_climbs_from_there(tmp_path):
    computer = Computer(tmp_path, traps={"AVX512"}, cache=tmp_path / "cache")
    chosen = llama_fit.climb(computer.toolbox(), record(computer.cache), [llama_fit.NATIVE])
    assert chosen.name == "without AMX and AVX-512"
    assert computer.built == ["native", "without AMX", "without AMX and AVX-512"]


def test_a_failure_that_is_no_signal_stops_with_its_reason_and_builds_nothing(tmp_path):
    computer = Computer(tmp_path, traps=set(), cache=tmp_path / "cache")
    broken = llama_fit.Proof(False, None, [], "Q8_0: loading", "llama.cpp rejected the file")
    box = replace(computer.toolbox(), prove=lambda: broken)
    expected = "failed in its self-test (Q8_0: loading): llama.cpp rejected the file"
    with pytest.raises(SystemExit, match=re.escape(expected)):
        llama_fit.ensure(box, record(computer.cache), lambda _: None)
    assert computer.built == [] and record(computer.cache).failed == {}


def test_forgetting_tries_the_native_build_again(tmp_path):
    computer = Computer(tmp_path, traps={"AMX_INT8"}, cache=tmp_path / "cache")
    llama_fit.ensure(computer.toolbox(), record(computer.cache), lambda _: None)
    remembered = record(computer.cache)
    remembered.forget()
    assert (record(computer.cache).passed, record(computer.cache).failed) == ({}, {})


def test_the_flags_of_a_step_reach_the_compiler(tmp_path):
    """``_build_wheel`` with a stand-in ``python`` that records what pip would get."""
    fake = tmp_path / "python"
    seen = tmp_path / "seen.jsonl"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, pathlib\n"
        f"with open({str(seen)!r}, 'a') as out:\n"
        "    out.write(json.dumps({'argv': sys.argv[1:], 'env': {k: os.environ.get(k, '') for k"
        " in ('CMAKE_ARGS', 'CFLAGS', 'CXXFLAGS')}}) + '\\n')\n"
        "args = sys.argv[1:]\n"
        "if 'download' in args:\n"
        "    d = pathlib.Path(args[args.index('-d') + 1])\n"
        "    (d / 'llama_cpp_python-0.3.36.tar.gz').write_text('sdist')\n"
        "if 'wheel' in args:\n"
        "    w = pathlib.Path(args[args.index('-w') + 1]); w.mkdir(parents=True)\n"
        "    (w / 'llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl').write_text('wheel')\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    step = llama_fit.steps_after(NATIVE_FEATURES)[1]
    base = {**os.environ, "CMAKE_ARGS": "-DGGML_CUDA=on", "CFLAGS": "-O2"}
    wheel = llama_fit._build_wheel(str(fake), "0.3.36", step, base, tmp_path / "kept")
    assert wheel == tmp_path / "kept" / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    download, build = (json.loads(line) for line in seen.read_text().splitlines())
    assert download["argv"][:2] == ["-m", "pip"] and "llama-cpp-python==0.3.36" in download["argv"]
    assert build["argv"][2:5] == ["wheel", "--no-deps", "--no-cache-dir"]
    assert build["env"]["CMAKE_ARGS"] == "-DGGML_CUDA=on"
    flags = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -mno-avx512f"
    assert build["env"]["CFLAGS"] == f"-O2 {flags}" and build["env"]["CXXFLAGS"] == flags


def test_this_computer_is_named_by_its_cpu(tmp_path):
    one, other = tmp_path / "one", tmp_path / "other"
    one.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: avx2 amx_tile\n")
    other.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: avx2\n")
    assert llama_fit.machine_key(one) == llama_fit.machine_key(one)
    assert llama_fit.machine_key(one) != llama_fit.machine_key(other)


def test_ensure_on_the_build_installed_here(tmp_path):
    """The real thing on this computer: the installed build is proved and remembered."""
    env = {**os.environ, "LOCALLLM_LLAMA_BUILDS": str(tmp_path / "builds")}
    script = [sys.executable, str(ROOT / "installers" / "llama_build.py"), "--ensure"]
    first = subprocess.run(script, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "llama.cpp build: the installed build passed its self-test" in first.stdout
    assert "llama.cpp build: CPU " in first.stdout
    second = subprocess.run(script, env=env, capture_output=True, text=True, timeout=900)
    assert second.stdout.rstrip().endswith("native, proved on this computer before")
