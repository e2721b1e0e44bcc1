"""The chat's numbers and shapes without Qt: what "model default" means for each setting,
how full the context is, and which messages are folded."""

from __future__ import annotations

from localllm.app.gui.state.chat.context_use import ContextUse
from localllm.app.gui.state.chat.folding import FOLD_LINES, fold
from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.state.model_defaults import (
    DAEMON_TEMPERATURE,
    ModelDefaults,
    modelfile_parameters,
)
from localllm.app.gui.state.records import ModelDetails
from localllm.daemon.inference.options import runner_options, sampling_params
from localllm.daemon.settings import Settings

GEMMA_PARAMETERS = (
    'stop                           "<end_of_turn>"\ntemperature                    1'
)


def test_defaults_are_what_the_daemon_would_use():
    """Checked against the daemon's own option code, so the window cannot drift from it
    (here with a fixed LOCALLLM_CONTEXT_LENGTH; the sized default comes from ``show``)."""
    fixed = Settings(num_ctx=4096)
    gemma = ModelDetails("gemma3:270m", parameters=GEMMA_PARAMETERS, context_length=32_768)
    defaults = ModelDefaults.of(gemma, daemon_context=4096)
    params = modelfile_parameters(gemma.parameters)
    assert defaults.context == runner_options(params, fixed, 32_768).num_ctx == 4096
    assert defaults.temperature == sampling_params(params).temperature == 1.0
    assert defaults.reply_limit is None and sampling_params(params).max_tokens is None
    assert defaults.context_text() == "runs at 4,096 of 32,768 tokens"

    plain = ModelDetails("tiny", parameters="num_predict 12", context_length=2048)
    defaults = ModelDefaults.of(plain, daemon_context=4096)
    assert defaults.temperature == DAEMON_TEMPERATURE == sampling_params({}).temperature
    assert defaults.context == runner_options({}, fixed, 2048).num_ctx == 2048
    assert defaults.reply_limit == 12 and defaults.context_text() == "2,048 tokens"

    own = ModelDetails("big", parameters="num_ctx 65536", context_length=32_768)
    assert (
        ModelDefaults.of(own, 4096).context
        == runner_options(modelfile_parameters(own.parameters), fixed, 32_768).num_ctx
    )


def test_the_context_the_daemon_sized_is_the_default():
    """With no fixed context setting, ``show`` says what the daemon sized (``runs_with``)."""
    sized = ModelDetails("gemma3:270m", context_length=32_768, runs_at=16_384)
    defaults = ModelDefaults.of(sized, daemon_context=0)
    assert defaults.context == 16_384
    assert defaults.context_text() == "runs at 16,384 of 32,768 tokens"
    unknown = ModelDefaults.of(ModelDetails("old", context_length=32_768), daemon_context=0)
    assert unknown.context == 2048  # the daemon's floor until it says more


def _reply(stats: ReplyStats, content: str = "words") -> Message:
    return Message("r", "assistant", content, stats=stats)


def test_context_use_counts_the_last_reply_the_daemon_measured():
    counted = ReplyStats(40, 20.0, 0.1, 2.0, prompt_tokens=200, context_tokens=240)
    use = ContextUse.of([Message("u", "user", "hi"), _reply(counted)], 4096)
    assert (use.used, use.available) == (240, 4096)
    assert use.text() == "Context: 240 of 4,096 tokens (6%)" and not use.nearly_full
    stopped = ReplyStats(15, 10.0, 0.1, 1.5, done_reason="stopped")  # no daemon count
    use = ContextUse.of([_reply(counted), _reply(stopped)], 256, streamed=5)
    assert use.used == 240 + 15 + 5 and use.nearly_full and "nearly full" in use.advice()
    assert ContextUse.of([], None).text() == ""


def test_long_messages_fold_to_their_first_lines():
    short = "\n".join(f"line {i}" for i in range(FOLD_LINES))
    assert not fold(short).folded and fold(short).shown == short
    long = "\n".join(f"line {i}" for i in range(100))
    folded = fold(long)
    assert folded.folded and folded.shown.endswith("line 29") and folded.hidden_lines == 70
    one_line = "x" * 120 * 50  # a pasted line with no breaks is just as long
    assert fold(one_line).folded and len(fold(one_line).shown) < len(one_line)
