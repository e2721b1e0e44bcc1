"""The transcript's HTML, one block per message: who, a thinking model's reasoning (one line,
"Thought for 3.2 s · 412 words ▸", that opens to show it; "Thinking…" while it goes on), the
text (folded when very long), an error in place, and the links under it (versions < 1/2 >,
Copy, Edit, Regenerate, Continue, Delete, with the reply's numbers). Whatever the model or the
user wrote is escaped: the reasoning is shown as plain text, the reply as our Markdown.

Links are ``action:<what>:<message id>[:<argument>]``; the transcript widget handles them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

from app.gui.state.chat.folding import fold
from app.gui.state.chat.records import Message
from app.gui.state.chat.thinking import thinking_summary
from app.gui.views.tool_call_html import tool_calls_block

__all__ = ["EMPTY", "BlockStyle", "message_block"]

EMPTY = (
    "<div style='color:gray; margin-top:40px;' align='center'><h3>Ask anything</h3>"
    "<p>Enter sends · Shift+Enter adds a line · Esc stops a reply</p></div>"
)


@dataclass(frozen=True, slots=True)
class BlockStyle:
    assistant: str  # the name over replies (the chat's model)
    bubble: str  # the background of the user's messages
    markdown: Callable[[Message, str], str]  # (message, the text to show) -> HTML


def message_block(
    m: Message,
    style: BlockStyle,
    *,
    last: bool,
    streaming: bool,
    expanded: bool,
    thinking_open: bool = False,
    open_results: set[str] | None = None,
) -> str:
    """``last``: the conversation's last message; ``streaming``: it is still being written;
    ``thinking_open``: its reasoning is shown rather than summed up in one line."""
    who = "You" if m.role == "user" else html.escape(style.assistant)
    head = f"<p style='margin-bottom:2px;'><b>{who}</b></p>"
    folded = fold(m.content)
    shown = m.content if expanded or streaming or not folded.folded else folded.shown
    if m.role == "user":
        text = html.escape(shown).replace("\n", "<br>")
        thumbnails = "".join(f"<img src='image:{m.id}/{i}'> " for i in range(len(m.images)))
        body = (
            f"<table width='100%' cellpadding='8' bgcolor='{style.bubble}'><tr><td>"
            f"{thumbnails + '<br>' if thumbnails else ''}{text}</td></tr></table>"
        )
    else:
        waiting = "<p><i>…</i></p>" if streaming and not m.thinking else ""
        body = _thinking(m, streaming, thinking_open)
        body += style.markdown(m, shown) if shown else ("" if m.tool_calls else waiting)
        body += tool_calls_block(m.tool_calls, open_results or set(), style.bubble)
    if folded.folded and not streaming:
        body += _fold_link(m.id, expanded, folded.hidden_lines)
    if m.failed:
        body += _error(m)
    footer = "" if streaming else _footer(m, last)
    return f"<div style='margin-bottom:14px;'>{head}{body}{footer}</div>"


def _thinking(m: Message, streaming: bool, shown: bool) -> str:
    """The reasoning's one line (a link that opens or closes it), and the reasoning when open."""
    if not m.thinking:
        return ""
    live = streaming and not m.content  # the answer has not begun: still thinking
    line = thinking_summary(m.thinking, m.thinking_seconds, live=live)
    link = (
        f"<a href='action:thinking:{m.id}' style='color:gray; text-decoration:none;'>"
        f"{html.escape(line)} {'▾' if shown else '▸'}</a>"
    )
    head = f"<p style='margin-top:0; margin-bottom:4px;'>{link}</p>"
    if not shown:
        return head
    text = html.escape(m.thinking.strip())
    return (
        f"{head}<table width='100%' cellpadding='6' style='margin-bottom:6px;'><tr>"
        f"<td style='color:gray; white-space:pre-wrap;'>{text}</td></tr></table>"
    )


def _fold_link(message_id: str, expanded: bool, hidden: int) -> str:
    if expanded:
        link = f"<a href='action:fold:{message_id}'>Show less</a>"
    else:
        link = f"<a href='action:unfold:{message_id}'>Show all ({hidden:,} more lines)</a>"
    return f"<p style='margin-top:2px;'>{link}</p>"


def _error(m: Message) -> str:
    hint = f"<br>{html.escape(m.hint)}" if m.hint else ""
    return (
        "<table width='100%' cellpadding='8' bgcolor='#fdecea'><tr><td>"
        f"<span style='color:#b42318;'><b>{html.escape(m.error)}</b>{hint}</span><br>"
        "<a href='action:regenerate'>Try again</a></td></tr></table>"
    )


def _versions(m: Message) -> list[str]:
    count = len(m.others) + 1
    if count < 2:
        return []
    back, ahead = "&lsaquo;", "&rsaquo;"  # the arrows, linked where there is a version
    if m.version:
        back = f"<a href='action:version:{m.id}:{m.version - 1}'>{back}</a>"
    if m.version < count - 1:
        ahead = f"<a href='action:version:{m.id}:{m.version + 1}'>{ahead}</a>"
    return [f"{back} {m.version + 1}/{count} {ahead}"]


def _footer(m: Message, last: bool) -> str:
    links = [f"<a href='action:copy:{m.id}'>Copy</a>"]
    if m.role == "user":
        links.append(f"<a href='action:edit:{m.id}'>Edit</a>")
        if last:  # its reply was deleted: ask for one
            links.append("<a href='action:regenerate'>Answer</a>")
    elif last and not m.failed:
        links.append("<a href='action:regenerate'>Regenerate</a>")
        if m.can_continue:
            links.append(f"<a href='action:continue:{m.id}'>Continue</a>")
    links.append(f"<a href='action:delete:{m.id}'>Delete</a>")
    stats = m.stats.summary() if m.stats else ""
    muted = f"<span style='color:gray;'>{html.escape(stats)}</span>&nbsp;&nbsp;" if stats else ""
    versions = " ".join(_versions(m))
    versions = f"{versions}&nbsp;&nbsp;" if versions else ""
    return f"<p style='font-size:small; margin-top:2px;'>{versions}{muted}{' · '.join(links)}</p>"
