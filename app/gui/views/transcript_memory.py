"""Where a long chat's model memory starts, drawn in the transcript: a divider above the first
message the model still sees ("The model no longer sees messages above this line"), with the
summary of what it no longer sees (folded to one line until clicked) when the chat keeps one.

The summary is the model's text: escaped and shown as plain text. Its link is
``ToggleSummary``; the transcript widget handles it.
"""

from __future__ import annotations

import html

from localllm.app.gui.design.tokens import Palette
from localllm.app.gui.state.chat.memory import DIVIDER_TEXT, ChatMemory
from localllm.app.gui.state.chat.transcript_actions import ToggleSummary, href

__all__ = ["memory_divider"]


def memory_divider(memory: ChatMemory, summary_open: bool, p: Palette) -> str:
    """The divider's HTML ("" when the model sees the whole chat)."""
    if not memory.starts_at:
        return ""
    line = f"<hr style='border: none; border-top: 1px dashed {p.warning};'>"
    label = (
        f"<p align='center' style='color:{p.warning}; font-size:small; margin:0;'>"
        f"{html.escape(DIVIDER_TEXT)}</p>"
    )
    summary = _summary(memory, summary_open, p)
    return f"<div style='margin-bottom:14px;'>{line}{label}{summary}</div>"


def _summary(memory: ChatMemory, shown: bool, p: Palette) -> str:
    if memory.overflow != "summarize" or not memory.summary:
        return ""
    link = (
        f"<a href='{href(ToggleSummary())}' style='color:{p.muted}; text-decoration:none;'>"
        f"Summary of the earlier messages {'▾' if shown else '▸'}</a>"
    )
    head = f"<p align='center' style='font-size:small; margin-top:2px;'>{link}</p>"
    if not shown:
        return head
    text = html.escape(memory.summary.strip())
    return (
        f"{head}<table width='100%' cellpadding='6'><tr>"
        f"<td style='color:{p.muted}; white-space:pre-wrap;'>{text}</td></tr></table>"
    )
