"""A reply's tool calls in the transcript: which tool, its arguments, and then Approve /
Always allow / Deny while it waits, "Running…" while it runs, or its result (folded when
long). The tool's name, arguments and result come from a model and an MCP server: untrusted,
so shown escaped, as plain text.

Links are ``DecideTool``, ``ShowAll`` and ``ShowLess`` (``state.chat.transcript_actions``).
"""

from __future__ import annotations

import html

from localllm.app.gui.design.tokens import Palette
from localllm.app.gui.state.chat.folding import fold
from localllm.app.gui.state.chat.tool_calls import DENIED, FAILED, PENDING, RUNNING, ToolCall
from localllm.app.gui.state.chat.transcript_actions import DecideTool, ShowAll, ShowLess, href

__all__ = ["tool_calls_block"]

_STATUS = {  # the tone of the status, and its words
    PENDING: ("warning", "Wants to run this tool"),
    RUNNING: ("muted", "Running…"),
    DENIED: ("muted", "Not allowed"),
    FAILED: ("danger", "Failed"),
}


def _plain(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def _result(call: ToolCall, expanded: bool, p: Palette) -> str:
    if call.status in (PENDING, RUNNING, DENIED) or not call.result:
        return ""
    folded = fold(call.result)
    shown = call.result if expanded or not folded.folded else folded.shown
    link = ""
    if folded.folded:
        link = (
            f"<br><a href='{href(ShowLess(call.id))}'>Show less</a>"
            if expanded
            else f"<br><a href='{href(ShowAll(call.id))}'>Show all "
            f"({folded.hidden_lines:,} more lines)</a>"
        )
    return f"<br><span style='color:{p.muted};'>Result:</span><br><tt>{_plain(shown)}</tt>{link}"


def _one(call: ToolCall, expanded: bool, p: Palette) -> str:
    tone, status = _STATUS.get(call.status, ("success", "Done"))
    color = getattr(p, tone)
    head = (
        f"Tool call: <b>{html.escape(call.name)}</b> "
        f"<span style='color:{color};'>· {html.escape(status)}</span>"
    )
    arguments = f"<br><tt>{_plain(call.arguments_text())}</tt>"
    actions = ""
    if call.status == PENDING:
        actions = (
            f"<br><a href='{href(DecideTool(call.id, 'approve'))}'>Approve</a> · "
            f"<a href='{href(DecideTool(call.id, 'always'))}'>Always allow this tool</a> · "
            f"<a href='{href(DecideTool(call.id, 'deny'))}'>Deny</a>"
        )
    return (
        f"<table width='100%' cellpadding='10' bgcolor='{p.surface_alt}' "
        "style='margin-top:4px; margin-bottom:4px;'>"
        f"<tr><td>{head}{arguments}{_result(call, expanded, p)}{actions}</td></tr></table>"
    )


def tool_calls_block(calls: tuple[ToolCall, ...], expanded: set[str], p: Palette) -> str:
    return "".join(_one(call, call.id in expanded, p) for call in calls)
