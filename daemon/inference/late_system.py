"""System messages past the first place, for templates that refuse them there.

Coding agents send instructions mid-conversation: Claude Code a ``system`` message after the
user's first one, Codex two ``developer`` messages in a row. Many templates render a system
message anywhere; others (Gemma's, Mistral's) raise unless the one system message comes first.
For those, ``fold_late_system`` gives the conversation they accept, losing no text: leading
system messages become one, and a later one joins the user message before it (or, with none
before it, the one after it). The prefix stays the same as the conversation grows, so the
runner's prefix cache still serves the next turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["fold_late_system"]


def fold_late_system(
    conversation: Sequence[Mapping[str, object]],
) -> list[dict[str, object]] | None:
    """The conversation with one leading system message at most, or None when it has that
    already (nothing to fold).

    One pass: each late system text is noted against the user message it joins, and every
    user message is rebuilt once at the end (rebuilding it for each text made a chat of
    thousands of late system messages quadratic: 13.5 s for 12,000).
    """
    lead = 0
    while lead < len(conversation) and conversation[lead].get("role") == "system":
        lead += 1
    late = any(m.get("role") == "system" for m in conversation[lead:])
    if lead <= 1 and not late:
        return None
    out: list[dict[str, object]] = []
    if lead:
        texts = [_text(m.get("content")) for m in conversation[:lead]]
        out.append({"role": "system", "content": "\n\n".join(texts)})
    joins: dict[int, list[str]] = {}  # index in ``out`` of a user message: texts after it
    last_user: int | None = None
    waiting: list[str] = []  # late system text with no user message before it yet
    for message in conversation[lead:]:
        role = message.get("role")
        if role == "system":
            text = _text(message.get("content"))
            if last_user is None:
                waiting.append(text)
            else:
                joins[last_user].append(text)
            continue
        message = dict(message)
        if role == "user":
            if waiting:
                message = _joined(message, ["\n\n".join(waiting)], after=False)
                waiting = []
            last_user = len(out)
            joins[last_user] = []
        out.append(message)
    for index, texts in joins.items():
        if texts:
            out[index] = _joined(out[index], texts, after=True)
    if waiting:
        out.append({"role": "user", "content": "\n\n".join(waiting)})
    return out


def _joined(message: Mapping[str, object], texts: list[str], *, after: bool) -> dict[str, object]:
    """``message`` with ``texts`` after (or before) its own content: joined to a string
    content, or a text part each beside its parts."""
    content = message.get("content")
    if isinstance(content, list):
        parts = [{"type": "text", "text": text} for text in texts]
        content = [*content, *parts] if after else [*parts, *content]
    else:
        added = "\n\n".join(texts)
        own = str(content or "")
        content = f"{own}\n\n{added}" if after else f"{added}\n\n{own}"
    return {**message, "content": content}


def _text(content: object) -> str:
    """A system message's text (its text parts joined, when it has parts)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content or "")
