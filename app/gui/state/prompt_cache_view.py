"""The daemon's prompt cache on disk as the Settings page shows it: what it holds against its
limit, what clearing it freed, and what it is for.

Qt-free, so the words are tested without widgets; the gateway makes these records from the
daemon's answers (``GET`` and ``DELETE /api/prompt-cache``).
"""

from __future__ import annotations

from dataclasses import dataclass

from localllm.app.gui.state.units import bytes_text

__all__ = ["PROMPT_CACHE_NOTE", "PromptCacheFreed", "PromptCacheUse", "freed_text", "usage_text"]

PROMPT_CACHE_NOTE = (
    "The state of long prompts, kept so a model loaded later skips reading them again (an "
    "agent's system prompt, a long document). Clearing it only costs time: those prompts are "
    "read again. Set LOCALLLM_PROMPT_CACHE_GB (in GiB) for the daemon to change its limit; 0 "
    "turns it off."
)


@dataclass(frozen=True, slots=True)
class PromptCacheUse:
    files: int
    bytes: int
    limit_bytes: int  # the most it may hold; 0: off (no new states are kept)

    @property
    def off(self) -> bool:
        return self.limit_bytes <= 0


@dataclass(frozen=True, slots=True)
class PromptCacheFreed:
    files: int
    bytes: int


def _files(count: int) -> str:
    return f"{count:,} file" if count == 1 else f"{count:,} files"


def usage_text(use: PromptCacheUse) -> str:
    """'3 files, 1.2 GB of 21.5 GB'; 'Off' (with what an earlier run left, if anything)."""
    held = f"{_files(use.files)}, {bytes_text(use.bytes)}"
    if use.off:
        return f"Off ({held} kept from before)" if use.files else "Off"
    return f"{held} of {bytes_text(use.limit_bytes)}"


def freed_text(freed: PromptCacheFreed) -> str:
    """What clearing did, for the window's status line."""
    if not freed.files:
        return "The prompt cache was already empty."
    return f"Prompt cache cleared: {_files(freed.files)}, {bytes_text(freed.bytes)} freed."
