"""The transcript's HTML, one block per message: the user's words in a bubble on the right; a
reply in a card, under the model's name, with a thinking model's reasoning folded into one line
("Thought for 3.2 s · 412 words ▸", "Thinking…" while it goes on), its text (folded when very
long), an error in place with what to do (Try again; Load anyway where the daemon refused the
model's load for memory), and a quiet footer: the version switcher ("< 2/2 >"),
Continue for a reply that was cut off, and its numbers in one short line that opens to all of
them (live while the reply streams). Bubbles, cards and the boxes in them are tables marked by
their colour; ``transcript_boxes`` paints them with round corners.

Copy, Edit, Regenerate and Delete are not in the text: they are buttons that appear over the
footer of the message under the pointer or picked with the keyboard (``message_actions``); the
footer keeps room for them. Each message is one top-level table, so the transcript can find a
message's place on screen. Whatever the model or the user wrote is escaped: the reasoning is
shown as plain text, the user's words and the reply as our Markdown (raw HTML off), so a fenced
block the user sent is a code block with its indentation, as in a reply.

Links are the typed actions of ``state.chat.transcript_actions``; the transcript widget handles
them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

from localllm.app.gui.design.tokens import Palette
from localllm.app.gui.state.chat.errors import memory_refused
from localllm.app.gui.state.chat.folding import fold
from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.state.chat.thinking import thinking_summary
from localllm.app.gui.state.chat.transcript_actions import (
    ContinueReply,
    LoadAnyway,
    Regenerate,
    ShowAll,
    ShowLess,
    ShowVersion,
    ToggleStats,
    ToggleThinking,
    href,
)
from localllm.app.gui.views.tool_call_html import tool_calls_block

__all__ = ["ACTIONS_HEIGHT", "EMPTY", "BlockStyle", "empty_html", "message_block"]

ACTIONS_HEIGHT = 28  # pixels the footer keeps for the action buttons
_INDENT = 12  # pixels: a footer starts under its card's text (the card's padding)
EMPTY = "Ask anything"


def empty_html(p: Palette) -> str:
    return (
        f"<div align='center' style='margin-top:80px;'><p style='font-size:16pt; "
        f"font-weight:600; color:{p.text};'>{EMPTY}</p><p style='color:{p.muted};'>Enter sends "
        "· Shift+Enter adds a line · Esc stops a reply · Alt+Up picks a message</p></div>"
    )


@dataclass(frozen=True, slots=True)
class BlockStyle:
    assistant: str  # the name over replies (the chat's model)
    palette: Palette
    markdown: Callable[[Message, str], str]  # (message, the text to show) -> HTML, any role
    stats_open: frozenset[str] = frozenset()  # replies whose numbers are shown in full
    live: ReplyStats | None = None  # the numbers of the reply streaming now, so far


def message_block(
    m: Message,
    style: BlockStyle,
    *,
    last: bool,
    streaming: bool,
    expanded: bool,
    thinking_open: bool = False,
    open_results: set[str] | None = None,
    before: str = "",
    after: str = "",
) -> str:
    """``last``: the conversation's last message; ``streaming``: it is still being written;
    ``thinking_open``: its reasoning is shown rather than summed up in one line; ``before`` and
    ``after``: our own HTML around it (the memory divider, the sources it cites)."""
    p = style.palette
    folded = fold(m.content)
    shown = m.content if expanded or streaming or not folded.folded else folded.shown
    more = ""  # under the text: "Show all", an error
    if folded.folded and not streaming:
        more += _fold_link(m.id, expanded, folded.hidden_lines)
    if m.failed:
        more += _error(m, p)
    if m.role == "user":  # their words exactly: our Markdown, as a reply's (code keeps its fences)
        text = style.markdown(m, shown)
        thumbnails = "".join(f"<img src='image:{m.id}/{i}'> " for i in range(len(m.images)))
        body = (  # a bubble: marked by its colour, painted round by ``transcript_boxes``
            f"<table align='right' cellpadding='10' cellspacing='0' bgcolor='{p.bubble}' "
            f"style='margin-top:4px;'><tr><td style='color:{p.text};'>"
            f"{thumbnails + '<br>' if thumbnails else ''}{text}</td></tr></table>{more}{after}"
        )
    else:
        who = html.escape(style.assistant)
        reply = (
            f"<p style='margin:0 0 6px 0; color:{p.muted}; font-size:small; font-weight:600;'>"
            f"{who}</p>"
        )
        waiting = f"<p style='color:{p.muted};'>…</p>" if streaming and not m.thinking else ""
        reply += _thinking(m, p, streaming, thinking_open)
        reply += style.markdown(m, shown) if shown else ("" if m.tool_calls else waiting)
        reply += tool_calls_block(m.tool_calls, open_results or set(), p)
        body = (  # a card: marked by its colour, painted round with its edge
            f"<table width='100%' cellpadding='12' cellspacing='0' bgcolor='{p.surface}'>"
            f"<tr><td>{reply}{more}{after}</td></tr></table>"  # its sources in it too
        )
    if streaming:
        footer = _live_footer(style.live, p)
    else:
        footer = _footer(m, p, last, m.id in style.stats_open)
    align = "right" if m.role == "user" else "left"
    head = f"<tr><td>{before}</td></tr>" if before else ""
    return (
        "<table width='100%' cellspacing='0' cellpadding='0' style='margin-bottom:10px;'>"
        f"{head}<tr><td align='{align}'>{body}</td></tr>"
        f"<tr><td>{footer}</td></tr></table>"
    )


def _thinking(m: Message, p: Palette, streaming: bool, shown: bool) -> str:
    """The reasoning's one line (a link that opens or closes it), and the reasoning when open."""
    if not m.thinking:
        return ""
    live = streaming and not m.content  # the answer has not begun: still thinking
    line = thinking_summary(m.thinking, m.thinking_seconds, live=live)
    link = (
        f"<a href='{href(ToggleThinking(m.id))}' style='color:{p.muted}; text-decoration:none;'>"
        f"{html.escape(line)} {'▾' if shown else '▸'}</a>"
    )
    head = f"<p style='margin-top:0; margin-bottom:4px;'>{link}</p>"
    if not shown:
        return head
    text = html.escape(m.thinking.strip())
    return (
        f"{head}<table width='100%' cellpadding='8' bgcolor='{p.surface_alt}' "
        f"style='margin-bottom:6px;'><tr><td style='color:{p.muted}; white-space:pre-wrap;'>"
        f"{text}</td></tr></table>"
    )


def _fold_link(message_id: str, expanded: bool, hidden: int) -> str:
    if expanded:
        link = f"<a href='{href(ShowLess(message_id))}'>Show less</a>"
    else:
        link = f"<a href='{href(ShowAll(message_id))}'>Show all ({hidden:,} more lines)</a>"
    return f"<p style='margin-top:4px;'>{link}</p>"


def _error(m: Message, p: Palette) -> str:
    hint = f"<br><span style='color:{p.text};'>{html.escape(m.hint)}</span>" if m.hint else ""
    anyway = f" · <a href='{href(LoadAnyway())}'>Load anyway</a>" if memory_refused(m.hint) else ""
    return (
        f"<table width='100%' cellpadding='10' bgcolor='{p.danger_soft}' style='margin-top:4px;'>"
        f"<tr><td><span style='color:{p.danger};'><b>{html.escape(m.error)}</b></span>{hint}"
        f"<br><a href='{href(Regenerate())}'>Try again</a>{anyway}</td></tr></table>"
    )


def _versions(m: Message, p: Palette) -> str:
    count = len(m.others) + 1
    if count < 2:
        return ""
    back, ahead = "&lsaquo;", "&rsaquo;"  # the arrows, linked where there is a version
    link = f"style='color:{p.text}; text-decoration:none; font-weight:600;'"
    if m.version:
        back = f"<a href='{href(ShowVersion(m.id, m.version - 1))}' {link}>{back}</a>"
    if m.version < count - 1:
        ahead = f"<a href='{href(ShowVersion(m.id, m.version + 1))}' {link}>{ahead}</a>"
    return f"<span style='color:{p.muted};'>{back} {m.version + 1}/{count} {ahead}</span>"


def _footer(m: Message, p: Palette, last: bool, stats_open: bool) -> str:
    """The quiet line under a message: what to do next and its numbers on the left, the
    version switcher on the right, where the action buttons appear over it (their own switcher
    last, in its place; the line keeps ``ACTIONS_HEIGHT`` for them)."""
    parts = []
    if m.role == "assistant" and last and m.can_continue and not m.failed:
        parts.append(f"<a href='{href(ContinueReply(m.id))}'>Continue</a>")
    if m.role == "user" and last:  # its reply was deleted: ask for one
        parts.append(f"<a href='{href(Regenerate())}'>Answer</a>")
    if m.stats is not None:
        parts.append(_stats(m.id, m.stats, p, stats_open))
    return _quiet_line(" &nbsp;·&nbsp; ".join(parts), _versions(m, p), p)


def _live_footer(live: ReplyStats | None, p: Palette) -> str:
    """A reply's quiet line while it streams: its numbers so far (live, never the last
    reply's)."""
    return _quiet_line(html.escape(live.summary()) if live is not None else "", "", p)


def _quiet_line(left: str, right: str, p: Palette) -> str:
    spacer = f"<img src='spacer:' width='{_INDENT}' height='{ACTIONS_HEIGHT}'>"  # under the text
    quiet = f"style='font-size:small; color:{p.muted};'"
    return (
        "<table width='100%' cellspacing='0' cellpadding='0'><tr>"
        f"<td valign='middle' {quiet}>{spacer}{left}</td>"
        f"<td align='right' valign='middle' {quiet}>{right}</td></tr></table>"
    )


def _stats(message_id: str, stats: ReplyStats, p: Palette, shown: bool) -> str:
    full = stats.summary()
    short = (
        f"{stats.tokens_per_second:.1f} tok/s"
        if stats.tokens_per_second is not None
        else full.split(" · ")[0]
    )
    why = {"length": "stopped at the token limit", "stopped": "stopped"}.get(stats.done_reason)
    short = f"{short} · {why}" if why else short  # why it ended early is always said
    text = full if shown else short
    return (
        f"<a href='{href(ToggleStats(message_id))}' style='color:{p.muted}; text-decoration:none;'>"
        f"{html.escape(text)} {'◂' if shown else '▸'}</a>"
    )
