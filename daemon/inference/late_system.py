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
    already (nothing to fold)."""
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
    waiting: list[str] = []  # late system text with no user message before it yet
    for message in conversation[lead:]:
        if message.get("role") == "system":
            target = _last_user(out)
            if target is None:
                waiting.append(_text(message.get("content")))
            else:
                out[target] = _joined(out[target], _text(message.get("content")), after=True)
            continue
        message = dict(message)
        if waiting and message.get("role") == "user":
            message = _joined(message, "\n\n".join(waiting), after=False)
            waiting = []
        out.append(message)
    if waiting:
        out.append({"role": "user", "content": "\n\n".join(waiting)})
    return out


def _last_user(messages: Sequence[Mapping[str, object]]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def _joined(message: Mapping[str, object], text: str, *, after: bool) -> dict[str, object]:
    """``message`` with ``text`` after (or before) its own content, as a string or a part."""
    content = message.get("content")
    if isinstance(content, list):
        part = {"type": "text", "text": text}
        content = [*content, part] if after else [part, *content]
    else:
        own = str(content or "")
        content = f"{own}\n\n{text}" if after else f"{text}\n\n{own}"
    return {**message, "content": content}


def _text(content: object) -> str:
    """A system message's text (its text parts joined, when it has parts)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content or "")
