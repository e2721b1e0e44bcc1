"""A chat as Markdown, for "Export as Markdown" in the chat list: its title, the model and the
date, the system prompt, then each question and answer (the version on screen, with a thinking
model's reasoning as a quote), so it reads well anywhere Markdown is shown.
"""

from __future__ import annotations

from datetime import datetime

from localllm.app.gui.state.chat.records import Conversation, Message

__all__ = ["markdown_file_name", "to_markdown"]

_UNSAFE = '<>:"/\\|?*'


def markdown_file_name(title: str) -> str:
    """A file name from the chat's title (nothing a file system forbids)."""
    cleaned = "".join("-" if c in _UNSAFE or ord(c) < 32 else c for c in title).strip(" .-")
    return f"{cleaned[:80] or 'chat'}.md"


def to_markdown(conversation: Conversation, messages: list[Message] | tuple[Message, ...]) -> str:
    when = datetime.fromtimestamp(conversation.updated_at or conversation.created_at)
    lines = [f"# {conversation.title}", ""]
    facts = [f"Model: {conversation.model}"] if conversation.model else []
    facts.append(f"Last used: {when:%Y-%m-%d %H:%M}")
    lines += [" · ".join(facts), ""]
    if conversation.system_prompt.strip():
        lines += ["**System prompt:**", "", _quote(conversation.system_prompt), ""]
    for message in messages:
        who = "You" if message.role == "user" else (conversation.model or "Assistant")
        lines += [f"## {who}", ""]
        if message.thinking.strip():
            lines += [_quote(message.thinking), ""]
        if message.images:
            count = len(message.images)
            lines += [f"*({count} picture{'s' * (count > 1)} attached)*", ""]
        lines += [message.content.strip() or "*(no text)*", ""]
        if message.failed:
            lines += [f"*{message.error}*", ""]
    return "\n".join(lines).rstrip() + "\n"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())
