"""What a model costs in memory at a context length, and the context the app asks for: the
Settings page's numbers, checked against Gemma 3 270M's GGUF figures (the issue's 2.8 GB at
32,768 tokens in 4 slots)."""

from __future__ import annotations

from app.gui.state.memory_cost import MemoryCost, kv_bytes_per_token
from app.gui.state.model_defaults import ModelDefaults
from app.gui.state.preferences import DEFAULT_CONTEXT, Preferences, chat_context
from app.gui.state.records import ModelDetails

GEMMA = ModelDetails(  # the keys of Gemma 3 270M's GGUF that decide its cache
    "gemma3-270m:latest",
    metadata=(
        ("gemma3.attention.head_count", "4"),
        ("gemma3.attention.head_count_kv", "1"),
        ("gemma3.attention.key_length", "256"),
        ("gemma3.block_count", "18"),
        ("gemma3.context_length", "32768"),
        ("gemma3.embedding_length", "640"),
    ),
    context_length=32768,
    runs_at=32768,
    slots=4,
)
WEIGHTS = 253_113_024


def test_the_cost_is_weights_plus_the_cache_for_every_token_in_every_slot():
    assert kv_bytes_per_token(GEMMA) == 2 * 18 * 1 * 256 * 2  # K and V, f16
    roomy = MemoryCost.of(GEMMA, WEIGHTS, 32768, 4)
    assert roomy.text().startswith("about 2.8 GB: 253.1 MB of weights + 2.4 GB for 32,768")
    desk = MemoryCost.of(GEMMA, WEIGHTS, 4096, 4)
    assert desk.total < roomy.total / 4
    assert desk.text().endswith("for 4,096 tokens in each of 4 slots")
    assert "slots" not in MemoryCost.of(GEMMA, WEIGHTS, 4096, 1).text()


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
