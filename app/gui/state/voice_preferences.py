"""The Settings page's Voice choices, without Qt: which model transcribes, in which language,
and which voice reads answers aloud; kept between runs in a key/value store (``QSettings``).

An empty choice means "automatic": the first installed model that can do it, and the language
Whisper hears. A chosen model that is no longer installed falls back the same way, and comes
back into use if it is installed again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from localllm.app.gui.state.chat_choice import Remembered

__all__ = [
    "LANGUAGES",
    "LANGUAGE_KEY",
    "TRANSCRIBER_KEY",
    "VOICE_KEY",
    "VoicePreferences",
    "in_use",
    "language_code",
]

TRANSCRIBER_KEY = "voice/transcriber"
LANGUAGE_KEY = "voice/language"
VOICE_KEY = "voice/voice"
AUTOMATIC_LANGUAGE = ("", "Detect it from the speech")
LANGUAGES = (  # the ones offered first; any other ISO 639-1 code can be typed
    AUTOMATIC_LANGUAGE,
    ("en", "English"),
    ("de", "German"),
    ("es", "Spanish"),
    ("fr", "French"),
    ("it", "Italian"),
    ("pt", "Portuguese"),
    ("nl", "Dutch"),
    ("pl", "Polish"),
    ("uk", "Ukrainian"),
    ("ru", "Russian"),
    ("tr", "Turkish"),
    ("ar", "Arabic"),
    ("hi", "Hindi"),
    ("zh", "Chinese"),
    ("ja", "Japanese"),
    ("ko", "Korean"),
)
_CODE = re.compile(r"[a-z]{2,3}")


def language_code(text: str) -> str | None:
    """The language a typed or picked entry names: "" for automatic, a code ("de" from "de",
    "German" or "German (de)"), or None when it names none."""
    typed = text.strip()
    if not typed:
        return ""
    for code, name in LANGUAGES:
        if typed.casefold() in (name.casefold(), f"{name} ({code})".casefold()):
            return code
    code = typed.lower()
    return code if _CODE.fullmatch(code) else None


def in_use(chosen: str, installed: Sequence[str]) -> str:
    """The model to use: ``chosen`` while it is installed, else the first installed one ("" for
    none)."""
    if chosen in installed:
        return chosen
    return installed[0] if installed else ""


@dataclass(frozen=True, slots=True)
class VoicePreferences:
    transcriber: str = ""  # "": the first installed transcription model
    language: str = ""  # "": detected; else an ISO 639-1 code
    voice: str = ""  # "": the first installed speech model

    @classmethod
    def read(cls, store: Remembered) -> VoicePreferences:
        """From ``store``; anything unexpected is read as automatic."""
        language = language_code(_text(store.value(LANGUAGE_KEY)))
        return cls(
            transcriber=_text(store.value(TRANSCRIBER_KEY)),
            language=language or "",
            voice=_text(store.value(VOICE_KEY)),
        )

    def save(self, store: Remembered) -> None:
        store.setValue(TRANSCRIBER_KEY, self.transcriber)
        store.setValue(LANGUAGE_KEY, self.language)
        store.setValue(VOICE_KEY, self.voice)


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
