"""The context chats ask for: a desktop context within what the model was trained for (Gemma 3
270M's figures), the Modelfile's own num_ctx first, and the preferences read back."""

from __future__ import annotations

from localllm.app.gui.state.model_defaults import ModelDefaults
from localllm.app.gui.state.preferences import DEFAULT_CONTEXT, Preferences, chat_context
from localllm.app.gui.state.records import ModelDetails

GEMMA = ModelDetails(  # trained for 32,768 tokens, which the daemon would run it at
    "gemma3-270m:latest",
    metadata=(("gemma3.context_length", "32768"),),
    context_length=32768,
    runs_at=32768,
    slots=4,
)


def test_chats_ask_for_a_desktop_context_within_what_the_model_knows():
    assert DEFAULT_CONTEXT == 4096
    assert chat_context(4096, 32768, None) == 4096
    assert chat_context(4096, 2048, None) == 2048  # never past the trained length
    assert chat_context(4096, 32768, 8192) is None  # the Modelfile's own num_ctx wins
    assert chat_context(0, 32768, None) is None  # the daemon decides
    assert ModelDefaults.of(GEMMA, 0, 4096).context == 4096  # not the daemon's 32,768
    assert ModelDefaults.of(GEMMA, 0, 0).context == 32768


def test_preferences_read_back_what_was_stored_or_the_default():
    assert Preferences.read("dark", "8192") == Preferences("dark", 8192)
    assert Preferences.read("purple", "12345") == Preferences("system", DEFAULT_CONTEXT)
    assert Preferences.read(None, "0").context == 0
