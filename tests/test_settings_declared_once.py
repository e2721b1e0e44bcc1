"""Settings are declared once (``daemon/setting_table.py``) and nothing drifts from it: the
docs' table, ``localllm serve --help`` and what ``Settings.from_env`` reads all come from it,
and no other module reads the environment or names a variable the table does not declare."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

import pytest

from localllm.app.cli.main import main
from localllm.daemon.settings import (
    MARKDOWN_BEGIN,
    MARKDOWN_END,
    REGENERATE_DOCS,
    SETTINGS,
    Settings,
    markdown_table,
    settings_rows,
)
from localllm.daemon.settings import main as settings_main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "configuration.md"
FOLDERS = ("app", "daemon", "model_registry", "installers")
SETTINGS_MODULES = {"daemon/settings.py", "daemon/setting_table.py"}
DECLARED = {setting.name for setting in SETTINGS}
OUR_NAME = re.compile(r"LOCALLLM_[A-Z0-9_]*[A-Z0-9]")

# Where reading the environment directly is right, and why: (module, function) -> reason.
ALLOWED_READS = {
    ("app/gui/main.py", "run_app"): "Qt's platform check before Qt loads: Qt itself reads "
    "this process's environment, not the settings",
    ("app/cli/commands/programs.py", "_app"): "the same check, before `localllm app` imports Qt",
    ("app/gui/system_libraries.py", "main"): "the same check, for ./dev before a long install",
    ("daemon/runners/process.py", "runner_process_env"): "a runner started without the "
    "daemon's settings (the self-test, tests) inherits this process's environment, as a "
    "child would",
    ("installers/llama_build.py", "main"): "passes the whole environment on to pip and CMake; "
    "runs before localllm is installed, so it cannot import the settings",
    ("installers/llama_fit.py", "build_cache"): "LOCALLLM_LLAMA_BUILDS (declared, group "
    "installers), read before localllm is installed",
}
# LOCALLLM_* names in the code that are no setting, and why.
NOT_SETTINGS = {
    "LOCALLLM_AGENT_KEY": "set for Codex, which reads the API key from it; localllm never reads it",
}


class RecordingEnvironment(Mapping[str, str]):
    """An environment that remembers every variable asked for by name."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.asked: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.asked.add(name)
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _docs_table() -> str:
    _before, begin, rest = DOCS.read_text(encoding="utf-8").partition(MARKDOWN_BEGIN)
    table, end, _after = rest.partition(MARKDOWN_END)
    assert begin and end, f"{DOCS} lost its {MARKDOWN_BEGIN} / {MARKDOWN_END} markers"
    return table.strip()


def _installer(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """An installer module, loaded from its file as ``python installers/...`` runs it."""
    path = ROOT / "installers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"installers_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# -- the docs ----------------------------------------------------------------------------------


def test_the_docs_table_is_the_generated_one() -> None:
    assert _docs_table() == markdown_table(), (
        f"docs/configuration.md's table is stale: run `{REGENERATE_DOCS}`"
    )


def test_the_variables_read_are_the_variables_documented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    daemon = RecordingEnvironment({})
    Settings.from_env(daemon)
    installer = RecordingEnvironment({"LOCALLLM_LLAMA_BUILDS": "/builds"})
    assert _installer("llama_fit", monkeypatch).build_cache("python", installer) == Path("/builds")
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", _docs_table(), re.MULTILINE))
    assert daemon.asked | installer.asked == documented == DECLARED


def test_the_regenerating_command_rewrites_only_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "configuration.md"
    shutil.copy(DOCS, copy)
    stale = DOCS.read_text(encoding="utf-8").replace("`LOCALLLM_HOST`", "`LOCALLLM_GONE`")
    copy.write_text(stale, encoding="utf-8")
    assert settings_main(["--markdown", str(copy)]) == 0
    assert copy.read_text(encoding="utf-8") == DOCS.read_text(encoding="utf-8")
    assert "updated" in capsys.readouterr().out


# -- the help ----------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["serve", "--help"], ["--help"]])
def test_the_help_lists_exactly_the_declared_variables(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    out = capsys.readouterr().out
    assert caught.value.code == 0
    for setting in SETTINGS:
        assert f"\n  {setting.name} " in out, setting.name
        assert f"(default: {setting.default})" in " ".join(out.split()), setting.name
    assert set(OUR_NAME.findall(out)) <= DECLARED


def test_the_defaults_people_read_are_the_defaults_parsed() -> None:
    parsed = Settings.from_env({})
    for setting in SETTINGS:
        value = getattr(parsed, setting.field or "", None)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            continue  # paths, secrets, addresses: described in words
        if setting.name == "LOCALLLM_PROMPT_CACHE_GB":
            continue  # computed from the free disk
        shown = re.split(r"[ ,]", setting.default)[0]
        if isinstance(value, str):
            assert shown == value, setting.name
        else:
            assert float(shown) == value or value is None, setting.name


# -- the app's Settings page -------------------------------------------------------------------


def test_rows_give_the_values_in_effect_and_hide_secrets() -> None:
    settings = Settings.from_env(
        {
            "LOCALLLM_HOST": "[::1]:7000",
            "LOCALLLM_KEEP_ALIVE": "-1",
            "LOCALLLM_API_KEY": "s3cret",
            "LOCALLLM_ORIGINS": "https://a.example, https://b.example",
            "LOCALLLM_PROMPT_CACHE_GB": "1.5",
        }
    )
    rows = {row.name: row for row in settings_rows(settings)}
    assert "LOCALLLM_LLAMA_BUILDS" not in rows  # the installers', not the daemon's
    assert (rows["LOCALLLM_HOST"].value, rows["LOCALLLM_HOST"].given) == ("[::1]:7000", True)
    assert rows["LOCALLLM_KEEP_ALIVE"].value == "-1"
    assert rows["LOCALLLM_API_KEY"].value == "set"
    assert "s3cret" not in repr(rows)
    assert rows["LOCALLLM_ORIGINS"].value == "https://a.example, https://b.example"
    assert rows["LOCALLLM_PROMPT_CACHE_GB"].value == "1.5 GiB"
    assert (rows["LOCALLLM_MAX_QUEUE"].value, rows["LOCALLLM_MAX_QUEUE"].given) == ("512", False)
    assert rows["HF_TOKEN"].value == "the one `localllm login` saved"
    assert rows["LOCALLLM_KV_CACHE_TYPE"].help.endswith("one of f16, q8_0, q4_0")


# -- the code ----------------------------------------------------------------------------------


def _sources() -> Iterator[tuple[str, Path]]:
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if "__pycache__" not in name and name not in SETTINGS_MODULES:
                yield name, path


class _EnvironmentReads(ast.NodeVisitor):
    """``os.environ``, ``os.getenv`` (however os is imported) and a declared variable read
    out of a mapping, each with the function it is in."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}
        self._where = ["<module>"]
        self._os_names = {"os"}

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._where.append(node.name)
        self.generic_visit(node)
        self._where.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        self._os_names |= {alias.asname or "os" for alias in node.names if alias.name == "os"}

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "os" and {"environ", "getenv"} & {a.name for a in node.names}:
            self._note(node, "from os import environ/getenv")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("environ", "environb", "getenv") and (
            isinstance(node.value, ast.Name) and node.value.id in self._os_names
        ):
            self._note(node, f"os.{node.attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            self._declared(node, node.args[0])
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            self._declared(node, node.slice)
        self.generic_visit(node)

    def _declared(self, node: ast.AST, key: ast.AST) -> None:
        if isinstance(key, ast.Constant) and key.value in DECLARED:
            self._note(node, f"reads {key.value} (use the settings)")

    def _note(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        self.found.setdefault(self._where[-1], []).append(f"line {line}: {what}")


def test_nothing_but_the_settings_reads_the_environment() -> None:
    found: dict[tuple[str, str], list[str]] = {}
    for name, path in _sources():
        reads = _EnvironmentReads()
        reads.visit(ast.parse(path.read_text(encoding="utf-8")))
        found |= {(name, function): lines for function, lines in reads.found.items()}
    assert {where: lines for where, lines in found.items() if where not in ALLOWED_READS} == {}
    assert set(ALLOWED_READS) <= set(found), "an allowed read is gone: drop it from the list"


def _strings(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def test_every_localllm_variable_named_in_the_code_is_declared() -> None:
    named: dict[str, set[str]] = {}
    for name, path in _sources():
        for text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            for variable in OUR_NAME.findall(text):
                named.setdefault(variable, set()).add(name)
    for path in sorted((ROOT / "installers").rglob("*")):  # shell scripts, agents, units
        if path.is_file() and path.suffix not in (".py", ".pyc", ".png", ".ico", ".icns"):
            for variable in OUR_NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
                named.setdefault(variable, set()).add(path.relative_to(ROOT).as_posix())
    undeclared = {v: sorted(files) for v, files in named.items() if v not in DECLARED}
    assert {v: files for v, files in undeclared.items() if v not in NOT_SETTINGS} == {}
    assert set(NOT_SETTINGS) <= set(named), "a listed exception is gone: drop it from the list"
