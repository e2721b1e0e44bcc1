"""An edited question keeps what followed it (LM Studio's branches, ChatGPT's "< 1/2 >").

The same versions a regenerated reply has (``Message.others``): the new words become the newest
version of the user's message, and each version not shown keeps the messages that followed it
(``Message.branch``). Flipping to another version puts what follows the shown one into its
branch and brings the other's back, so the conversation is always the versions on screen, and
the model sees only those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from localllm.app.gui.state.chat.records import Message, new_id

__all__ = ["edited", "switched", "without_version"]


def edited(messages: Sequence[Message], index: int, text: str, now: float) -> list[Message]:
    """The conversation up to the question at ``index``, asked now as ``text``: its old words,
    with everything that followed them, stay as its earlier version."""
    old = _holding(messages, index)
    new = Message(new_id(), "user", text, old.images, created_at=now)
    return [*messages[:index], new.with_versions(old.versions)]


def switched(messages: Sequence[Message], index: int, version: int) -> list[Message]:
    """The conversation with version ``version`` of the question at ``index`` shown, and the
    messages that followed that version after it."""
    return _shown(messages[:index], _holding(messages, index).showing(version))


def without_version(messages: Sequence[Message], index: int) -> list[Message]:
    """The question at ``index`` without its shown version and what followed that version; its
    neighbour shown instead, with its own branch. The question goes when it had no other."""
    rest = _holding(messages, index).without_shown_version()
    return list(messages[:index]) if rest is None else _shown(messages[:index], rest)


def _holding(messages: Sequence[Message], index: int) -> Message:
    """The question at ``index`` with what follows it kept in its branch."""
    return replace(messages[index], branch=tuple(messages[index + 1 :]))


def _shown(before: Sequence[Message], question: Message) -> list[Message]:
    """``before``, the question, and its branch as the conversation that follows it."""
    return [*before, replace(question, branch=()), *question.branch]
