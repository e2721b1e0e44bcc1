"""Shared fixtures: generated GGUF models and temporary stores.

Every test that needs a model gets a real one, written by ``model_registry.tiny_gguf`` in well
under a second, so the suite runs real llama.cpp on real files and needs no network.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> Path:
    """A small F16 llama-architecture GGUF (shared, never modified by tests)."""
    from localllm.model_registry.tiny_gguf import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("models") / "tiny.gguf", seed=1)


@pytest.fixture(scope="session")
def tiny_q8_model_path(tmp_path_factory) -> Path:
    from localllm.model_registry.tiny_gguf import write_tiny_model

    return write_tiny_model(
        tmp_path_factory.mktemp("models") / "tiny-q8.gguf", n_embd=64, file_type="Q8_0", seed=2
    )


@pytest.fixture(scope="module")
def tiny_q8_model(tiny_q8_model_path):
    """The tiny Q8_0 model loaded in this process (1 thread), for tests that drive the
    runner's parts directly."""
    import llama_cpp

    from localllm.daemon.runners.worker.model import Model
    from tests.support.runner import make_spec

    llama_cpp.llama_backend_init()
    loaded = Model.load(make_spec(tiny_q8_model_path, num_threads=1))
    yield loaded
    loaded.close()


@pytest.fixture(scope="session")
def thinking_model_path(tmp_path_factory) -> Path:
    """A tiny model that thinks as Qwen3 does (its template opens ``<think>``). Its random
    weights never close the thinking: give ``think_budget`` to make it answer."""
    from localllm.model_registry.tiny_gguf import write_tiny_model

    path = tmp_path_factory.mktemp("models") / "thinker.gguf"
    return write_tiny_model(path, thinking="qwen3", seed=4, file_type="Q8_0")


@pytest.fixture(scope="module")
def harness():
    """The runner tests' event loop, one per module, so runners outlive one ``asyncio.run``."""
    from tests.support.runner import Harness

    h = Harness()
    yield h
    h.close()


@pytest.fixture
def store(tmp_path):
    from localllm.model_registry.store import Store

    return Store(tmp_path / "store")


@pytest.fixture
def imported_store(store, tiny_model_path):
    """A store holding ``tiny:latest`` imported from the shared tiny model."""
    from localllm.model_registry.importer import import_gguf

    import_gguf(store, "tiny", tiny_model_path)
    return store


# --- the fast tier: `./dev test --fast` -----------------------------------------------------
# A test is end-to-end when its folder is, when it is marked slow, or when its code, its
# fixtures' code or the tests' own helpers they call name one of the parts below: a daemon, a
# runner or llama.cpp model, a Qt window, a network server, the real model. Found from the code,
# so a new test lands in the right tier without a list of tests to keep.

END_TO_END_FOLDERS = ("gui", "agents", "installers")
END_TO_END_PARTS = frozenset(
    {
        "Daemon",
        "GuiDaemon",
        "front_daemon",
        "serve_in_thread",
        "serve_daemon_in_thread",
        "Harness",
        "RunnerProcess",
        "llama_cpp",
        "LocalHub",
        "subprocess",
        "gemma_path",
        "qtbot",
        "qapp",
        "Popen",
        "ensure_daemon",
        "HTTPServer",
        "ThreadingHTTPServer",
    }
)


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="run only the unit tests: no daemon, runner, Qt window, server or real model",
    )


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """Skip whole end-to-end folders under ``--fast`` before they are imported."""
    if not config.getoption("fast"):
        return None
    tests = Path(__file__).parent
    if collection_path.parent == tests and collection_path.name in END_TO_END_FOLDERS:
        return True
    return None


def pytest_collection_modifyitems(config, items) -> None:
    if not config.getoption("fast"):
        return
    seen: dict[object, bool] = {}
    end_to_end = {item: _end_to_end(item, seen) for item in items}
    fast = [item for item in items if not end_to_end[item]]
    slow = [item for item in items if end_to_end[item]]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = fast


def _end_to_end(item, seen: dict[object, bool]) -> bool:
    if item.get_closest_marker("slow") or END_TO_END_PARTS & set(item.fixturenames):
        return True
    functions = [getattr(item, "function", None)]
    fixture_info = getattr(item, "_fixtureinfo", None)
    if fixture_info is not None:
        for definitions in fixture_info.name2fixturedefs.values():
            functions.extend(definition.func for definition in definitions)
    return any(_names_a_part(function, seen) for function in functions)


def _names_a_part(function, seen: dict[object, bool]) -> bool:
    """Whether ``function`` (or a test helper it calls, followed through the tests' own
    modules) names an end-to-end part."""
    function = getattr(function, "__func__", function)
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    if function in seen:
        return seen[function]
    seen[function] = False  # a cycle through the helpers proves nothing
    names = _code_names(code)
    found = bool(END_TO_END_PARTS & names)
    namespace = getattr(function, "__globals__", {})
    for name in names if not found else ():
        helper = namespace.get(name)
        for candidate in _helper_functions(helper):
            if _names_a_part(candidate, seen):
                found = True
                break
        if found:
            break
    seen[function] = found
    return found


def _code_names(code) -> set[str]:
    names = set(code.co_names) | set(code.co_varnames)
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            names |= _code_names(constant)
    return names


def _helper_functions(helper) -> list:
    """The tests' own functions behind ``helper`` (defined under tests/): itself, or a class's
    methods."""
    if not isinstance(helper, type):
        return [helper] if _under_tests(helper) else []
    module = sys.modules.get(helper.__module__)
    if not _under_tests(module):
        return []
    members = list(vars(helper).values())
    return [getattr(member, "__func__", getattr(member, "fget", member)) for member in members]


def _under_tests(function_or_module) -> bool:
    code = getattr(function_or_module, "__code__", None)
    where = code.co_filename if code else getattr(function_or_module, "__file__", None)
    return where is not None and Path(where).is_relative_to(Path(__file__).parent)
