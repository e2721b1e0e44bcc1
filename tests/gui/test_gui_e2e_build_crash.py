"""The app over a daemon whose llama.cpp build this computer cannot run: the chat's reply fails
in place with the daemon's own words (what is wrong and the command that fixes it), not a
generic "runner exited". The runner really dies by SIGILL (``tests/support/crashing_build``)."""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import REBUILD_COMMAND
from tests.support.crashing_build import crashing_build
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models

pytestmark = pytest.mark.slow


def test_a_reply_on_a_build_this_cpu_cannot_run_says_how_to_fix_it(
    qtbot, tmp_path, tiny_q8_model_path
):
    hook = crashing_build(tmp_path / "hook", "SIGILL", "batch")
    daemon = GuiDaemon(tmp_path / "daemon", tiny_models(tiny_q8_model_path),
                       env={"PYTHONPATH": hook["PYTHONPATH"]})  # fmt: skip
    try:
        services, _ = open_app(qtbot, daemon.gateway(), tmp_path / "app", window=False)
        chat = services.chat
        qtbot.waitUntil(lambda: services.library.loaded, timeout=30_000)
        chat.new_chat(MODEL)
        with qtbot.waitSignal(chat.reply_finished, timeout=300_000):
            assert chat.send("Hello there, how are you today?")
        failed = chat.session.messages[-1]
        assert failed.failed
        assert "this llama.cpp build uses CPU instructions this computer cannot run" in failed.error
        assert REBUILD_COMMAND in failed.error
        services.shutdown()
    finally:
        daemon.stop()
