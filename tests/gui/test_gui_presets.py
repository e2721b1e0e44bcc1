"""Chat settings without Qt: presets (save, pick, delete, kept on disk), the per-chat options
with their Advanced values. (How many GPU layers the daemon's plan of a chat places is
``test_gui_setting_plan``'s.)"""

from __future__ import annotations

import json

import pytest

from localllm.app.gui.state.chat.records import ChatOptions
from localllm.app.gui.state.presets import Preset, PresetError, Presets, PresetStore, preset_name

PRECISE = ChatOptions(temperature=0.1, top_k=20, top_p=0.8, min_p=0.1, repeat_penalty=1.2, seed=7)


def test_presets_are_saved_picked_by_their_values_and_deleted():
    presets = Presets().saved(Preset("Precise", "Be exact.", PRECISE))
    presets = presets.saved(Preset("creative", "", ChatOptions(temperature=1.3)))
    assert presets.names() == ["creative", "Precise"]  # by name, ignoring case
    assert presets.matching(" Be exact. ", PRECISE).name == "Precise"  # a chat using it
    assert presets.matching("Be exact.", ChatOptions(temperature=0.1)) is None  # edited since
    replaced = presets.saved(Preset("PRECISE", "Be very exact.", PRECISE))
    assert replaced.names() == ["creative", "PRECISE"]
    assert replaced.get("precise").system_prompt == "Be very exact."
    assert replaced.deleted("Precise").names() == ["creative"]
    assert presets.names() == ["creative", "Precise"]  # immutable: each change is a new list


def test_a_preset_needs_a_sensible_name():
    assert preset_name("  Code   review ") == "Code review"
    with pytest.raises(PresetError, match="needs a name"):
        preset_name("   ")
    with pytest.raises(PresetError, match="at most 60"):
        preset_name("x" * 61)


def test_presets_are_kept_on_disk(tmp_path):
    store = PresetStore(tmp_path / "presets.json")
    assert list(store.load()) == []  # none yet
    presets = Presets([Preset("Precise", "Be exact.", PRECISE), Preset("Plain")])
    store.save(presets)
    assert PresetStore(tmp_path / "presets.json").load() == presets
    assert not list(tmp_path.glob("*.tmp"))
    store.save(presets.deleted("Plain"))
    assert PresetStore(tmp_path / "presets.json").load().names() == ["Precise"]


def test_an_unreadable_presets_file_is_set_aside_not_overwritten(tmp_path):
    path = tmp_path / "presets.json"
    path.write_text('{"presets": [{"name": ')
    with pytest.raises(PresetError, match=r"kept as presets\.json\.unreadable"):
        PresetStore(path).load()
    assert (tmp_path / "presets.json.unreadable").read_text() == '{"presets": [{"name": '
    assert list(PresetStore(path).load()) == []


def test_chat_options_carry_the_advanced_values_and_read_old_chats():
    options = ChatOptions(temperature=0.5, top_k=0, seed=42, num_gpu=-1)
    assert options.to_options() == {"temperature": 0.5, "top_k": 0, "seed": 42, "num_gpu": -1}
    assert ChatOptions.from_json(json.loads(json.dumps(PRECISE.to_json()))) == PRECISE
    old = {"temperature": 0.2, "num_ctx": 4096, "num_predict": None}  # saved before Advanced
    assert ChatOptions.from_json(old) == ChatOptions(temperature=0.2, num_ctx=4096)
