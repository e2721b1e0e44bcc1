"""The resource limits in Settings: defaults, overrides, and clear refusals of bad values."""

from __future__ import annotations

import pytest

from localllm.daemon.settings import Settings


def test_defaults_and_overrides():
    default = Settings.from_env({})
    assert (default.max_pulls, default.header_timeout, default.body_timeout) == (3, 30.0, 60.0)
    env = {
        "LOCALLLM_MAX_PULLS": "1",
        "LOCALLLM_HEADER_TIMEOUT": "2.5",
        "LOCALLLM_BODY_TIMEOUT": "9",
    }
    chosen = Settings.from_env(env)
    assert (chosen.max_pulls, chosen.header_timeout, chosen.body_timeout) == (1, 2.5, 9.0)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("LOCALLLM_MAX_PULLS", "0", "LOCALLLM_MAX_PULLS must be at least 1, got 0"),
        ("LOCALLLM_MAX_PULLS", "many", "LOCALLLM_MAX_PULLS must be an integer, got 'many'"),
        ("LOCALLLM_HEADER_TIMEOUT", "0", "must be a number of seconds above 0, got 0"),
        ("LOCALLLM_BODY_TIMEOUT", "-1", "must be a number of seconds above 0, got -1"),
        ("LOCALLLM_BODY_TIMEOUT", "nan", "must be a number of seconds above 0, got nan"),
    ],
)
def test_bad_values_are_refused_saying_what_is_allowed(key, value, message):
    with pytest.raises(ValueError, match=message):
        Settings.from_env({key: value})
