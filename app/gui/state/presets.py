"""Presets: named sets of chat settings (system prompt and parameters) to pick for any chat.

As in LM Studio: save what a chat uses under a name, pick it for another chat, delete it when
done. Picking copies the values into the chat, so deleting a preset never changes a chat.
Kept in ``presets.json`` next to the chat history, written whole to a temporary file and
renamed over the old one, so a crash never leaves half a file. Qt-free and blocking: the app
reads and writes it on its disk worker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localllm.app.gui.state.chat.records import ChatOptions

__all__ = ["MAX_NAME", "Preset", "PresetError", "PresetStore", "Presets", "preset_name"]

MAX_NAME = 60
_VERSION = 1


class PresetError(ValueError):
    """A preset name or file that cannot be used, in words for the user."""


def preset_name(text: str) -> str:
    """``text`` as a preset name (spaces trimmed); PresetError says what is wrong."""
    name = " ".join(str(text).split())
    if not name:
        raise PresetError("a preset needs a name")
    if len(name) > MAX_NAME:
        raise PresetError(f"a preset name has at most {MAX_NAME} characters")
    return name


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    system_prompt: str = ""
    options: ChatOptions = field(default_factory=ChatOptions)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "system_prompt": self.system_prompt,
            "options": self.options.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Preset:
        options = data.get("options")
        return cls(
            preset_name(data.get("name", "")),
            str(data.get("system_prompt") or ""),
            ChatOptions.from_json(dict(options) if isinstance(options, Mapping) else None),
        )


class Presets:
    """An immutable list of presets in name order; names are unique, ignoring case."""

    def __init__(self, presets: Iterable[Preset] = ()):
        unique = {p.name.casefold(): p for p in presets}
        self._presets = tuple(sorted(unique.values(), key=lambda p: p.name.casefold()))

    def __iter__(self) -> Iterator[Preset]:
        return iter(self._presets)

    def __len__(self) -> int:
        return len(self._presets)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Presets) and self._presets == other._presets

    def names(self) -> list[str]:
        return [p.name for p in self._presets]

    def get(self, name: str) -> Preset | None:
        key = name.casefold()
        return next((p for p in self._presets if p.name.casefold() == key), None)

    def saved(self, preset: Preset) -> Presets:
        """With ``preset`` added, replacing the one of the same name."""
        return Presets([*self.deleted(preset.name), preset])

    def deleted(self, name: str) -> Presets:
        key = name.casefold()
        return Presets(p for p in self._presets if p.name.casefold() != key)

    def matching(self, system_prompt: str, options: ChatOptions) -> Preset | None:
        """The preset a chat with these settings uses, if one has exactly them."""
        wanted = (system_prompt.strip(), options)
        return next((p for p in self if (p.system_prompt.strip(), p.options) == wanted), None)


class PresetStore:
    """``presets.json``; a file that cannot be read is set aside, never overwritten."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> Presets:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return Presets()
        except OSError as error:
            raise PresetError(f"cannot read the presets: {error.strerror}") from None
        try:
            document = json.loads(raw)
            return Presets(Preset.from_json(item) for item in document["presets"])
        except (ValueError, KeyError, TypeError, AttributeError):
            kept = self.path.with_name(self.path.name + ".unreadable")
            os.replace(self.path, kept)
            raise PresetError(
                f"the presets file could not be read; it was kept as {kept.name}"
            ) from None

    def save(self, presets: Presets) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = {"version": _VERSION, "presets": [p.to_json() for p in presets]}
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(document, indent=2, ensure_ascii=False), "utf-8")
        os.replace(temporary, self.path)
