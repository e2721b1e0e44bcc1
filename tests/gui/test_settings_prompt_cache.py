"""The prompt cache row on the Settings page: its words (Qt-free), a daemon that does not answer
(shown, never raised), then the real app over a real daemon whose prompt cache holds files
written as a runner writes them: the row counts them, and Clear empties the folder, says what
it freed and counts again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.prompt_cache_view import (
    PromptCacheFreed,
    PromptCacheUse,
    freed_text,
    usage_text,
)
from localllm.app.gui.views.settings_page import PromptCacheRow
from localllm.app.gui.workers import Workers
from localllm.daemon.client import Client
from localllm.daemon.runners.prompt_store import PromptState, PromptStore, namespace
from tests.support.daemon import free_port
from tests.support.gui_e2e import GuiDaemon, open_app, tiny_models

GIB = 1 << 30


def test_the_row_says_what_the_cache_holds_against_its_limit():
    assert usage_text(PromptCacheUse(3, 1_234_000_000, 20 * GIB)) == "3 files, 1.2 GB of 21.5 GB"
    assert usage_text(PromptCacheUse(1, 2_500, GIB)) == "1 file, 2.5 KB of 1.1 GB"
    assert usage_text(PromptCacheUse(0, 0, GIB)) == "0 files, 0 B of 1.1 GB"
    assert usage_text(PromptCacheUse(1_200, 5_000_000, GIB)).startswith("1,200 files, 5.0 MB")


def test_an_off_cache_says_off_and_what_an_earlier_run_left():
    assert usage_text(PromptCacheUse(0, 0, 0)) == "Off"
    assert usage_text(PromptCacheUse(2, 3_000_000, 0)) == "Off (2 files, 3.0 MB kept from before)"


def test_clearing_says_what_it_freed():
    freed = PromptCacheFreed(4, 8_400_000_000)
    assert freed_text(freed) == "Prompt cache cleared: 4 files, 8.4 GB freed."
    assert freed_text(PromptCacheFreed(1, 900)) == "Prompt cache cleared: 1 file, 900 B freed."
    assert freed_text(PromptCacheFreed(0, 0)) == "The prompt cache was already empty."


def test_a_daemon_that_does_not_answer_is_shown_not_raised(qtbot):
    nobody = Client(f"http://127.0.0.1:{free_port()}", timeout=5)
    workers = Workers()
    row = PromptCacheRow(Gateway(nobody), workers)
    qtbot.addWidget(row)
    try:
        row.refresh()
        qtbot.waitUntil(lambda: row.usage.text().startswith("Not known now:"), timeout=10_000)
        assert "not answering" in row.usage.text()
        assert not row.clear_button.isEnabled()
        with qtbot.waitSignal(row.message, timeout=10_000) as said:
            row.clear()
        assert said.args[0].startswith("The prompt cache was not cleared: ")
        qtbot.waitUntil(lambda: row.usage.text().startswith("Not known now:"), timeout=10_000)
    finally:
        workers.shutdown()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("gui-prompt-cache")
    running = GuiDaemon(root, tiny_models(tiny_model_path), {"LOCALLLM_PROMPT_CACHE_GB": "1"})
    yield running
    running.stop()


def _store_prompts(folder: Path) -> int:
    """Two prompt states written as a runner writes them; their bytes on disk."""
    store = PromptStore(folder, namespace({"model": "test"}), GIB, 16, print, reserve_bytes=0)
    for first in (0, 1000):  # neither starts the other, so both are kept
        tokens = np.arange(first, first + 64, dtype=np.int32)
        assert store.write(PromptState(tokens, bytes(2000), 0, 0, ()))
    return sum(path.stat().st_size for path in folder.rglob("*.kv"))


@pytest.mark.slow
def test_the_row_counts_the_files_and_clear_empties_the_folder(qtbot, daemon, tmp_path):
    folder = daemon.settings().prompt_cache_dir
    held = _store_prompts(folder)
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    page = window.settings_page
    row = page.prompt_cache
    try:
        window.show_page("Settings")  # shown: asked
        counted = usage_text(PromptCacheUse(2, held, GIB))
        assert counted.startswith("2 files, ")
        qtbot.waitUntil(lambda: row.usage.text() == counted, timeout=10_000)
        assert row.clear_button.isEnabled()

        with qtbot.waitSignal(page.message, timeout=10_000) as said:
            row.clear_button.click()
        assert said.args[0] == freed_text(PromptCacheFreed(2, held))
        assert window.statusBar().currentMessage() == said.args[0]
        assert not list(folder.rglob("*.kv"))
        empty = usage_text(PromptCacheUse(0, 0, GIB))
        qtbot.waitUntil(lambda: row.usage.text() == empty, timeout=10_000)
        assert not row.clear_button.isEnabled()

        _store_prompts(folder)  # written by someone else while the page is away
        window.show_page("Chat")
        window.show_page("Settings")
        qtbot.waitUntil(lambda: row.usage.text() == counted, timeout=10_000)
    finally:
        services.shutdown()
