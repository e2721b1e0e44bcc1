"""``records.json`` of ``installers/llama_fit.py`` as a build cache may hold it: edited by hand,
cut short by a full disk, written by another version. Whatever it holds, the install reads what
it can, warns about the rest and goes on: never a ``KeyError`` or ``TypeError``."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "installers"))
import llama_fit  # noqa: E402

MACHINE, BUILD = "this-computer", "build-1"

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
failures = values | st.fixed_dictionaries({}, optional={"why": values, "features": values})
builds = values | st.dictionaries(st.sampled_from([BUILD, "build-2"]), failures, max_size=2)
computers = values | st.fixed_dictionaries({}, optional={"passed": builds, "failed": builds})
documents = values | st.dictionaries(st.sampled_from([MACHINE, "other"]), computers, max_size=2)


class Installs:
    """A toolbox whose build ``BUILD`` is installed, and whose rebuilds pass their self-test."""

    def __init__(self, folder: Path):
        self.folder, self.installed = folder, BUILD

    def toolbox(self) -> llama_fit.Toolbox:
        def install(wheel: Path) -> None:
            self.installed = wheel.name

        return llama_fit.Toolbox(
            identify=lambda: self.installed,
            prove=lambda: llama_fit.Proof(ok=True),
            wheel_folder=lambda step: self.folder / "none",
            build_wheel=lambda step: self.folder / f"rebuilt {step.name}.whl",
            install=install,
        )


@settings(deadline=None)
@given(documents)
def test_whatever_the_file_holds_the_install_goes_on(document):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "records.json"
        path.write_text(json.dumps(document))
        said: list[str] = []
        record = llama_fit.Record(path, MACHINE, said.append)
        assert all(isinstance(step, str) for step in record.passed.values())
        for failure in record.failed.values():
            assert isinstance(failure["why"], str) and isinstance(failure["features"], list)
        step = llama_fit.ensure(Installs(Path(folder)).toolbox(), record, said.append)
        if step is None:  # proved here before, as the file said
            assert record.passed[BUILD] == document[MACHINE]["passed"][BUILD]
        else:  # what was proved now is written, and reads back cleanly
            again: list[str] = []
            assert llama_fit.Record(path, MACHINE, again.append).passed == record.passed
            assert again == []


def test_a_truncated_file_is_read_as_empty_with_a_warning(tmp_path):
    path = tmp_path / "records.json"
    record = llama_fit.Record(path, MACHINE, lambda _: None)
    record.add_failure(BUILD, "was killed by SIGILL", ["AVX2", "AMX_INT8"])
    record.add_pass("build-2", "without AMX")
    path.write_text(path.read_text()[:40])
    said: list[str] = []
    cut = llama_fit.Record(path, MACHINE, said.append)
    assert (cut.passed, cut.failed) == ({}, {})
    assert said == [
        "llama.cpp build: warning: records.json cannot be read (JSONDecodeError); what it says "
        "is ignored and those builds are proved again"
    ]


def test_entries_of_the_wrong_shape_are_left_out_and_the_rest_kept(tmp_path):
    path = tmp_path / "records.json"
    good = {"why": "was killed by SIGILL", "features": ["AVX512"]}
    mine = {
        "passed": {"build-2": "portable", "build-3": 7},
        "failed": {BUILD: good, "build-4": {"why": "x"}, "build-5": {"features": "AVX"}},
    }
    path.write_text(json.dumps({MACHINE: mine, "other": "anything"}))
    said: list[str] = []
    record = llama_fit.Record(path, MACHINE, said.append)
    assert record.passed == {"build-2": "portable"} and record.failed == {BUILD: good}
    assert said[0].startswith("llama.cpp build: warning: records.json has 3 entries it cannot")
    record.add_pass("build-6", "native")
    assert json.loads(path.read_text())["other"] == "anything"  # another computer's, as it was
    path.write_text("[]")
    said.clear()
    assert llama_fit.Record(path, MACHINE, said.append).passed == {}
    assert said == [
        "llama.cpp build: warning: records.json is not a JSON object; what it says is ignored "
        "and those builds are proved again"
    ]
