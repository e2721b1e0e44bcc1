"""Where a chat prompt's system part ends: the runner keeps a checkpoint there.

Conversations that start with the same system messages and tools (a coding agent's sessions:
tens of thousands of tokens of instructions and tool schemas) share the rendered prompt up to
the first other message, and part there. A sliding-window model's runner can only resume a
shared prefix from a checkpoint of its window cache (``daemon.runners.worker.window``); the
runner cannot see messages in a rendered prompt, so the daemon tells it where they part.
It renders the system messages with a marker for the next message's content (templates such as
Gemma's put the system prompt inside the first user turn, so the system messages alone render
nothing), and takes what comes before the marker, as far as the whole prompt starts with it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from localllm.daemon.errors import TemplateError

if TYPE_CHECKING:
    from localllm.daemon.inference.templates import ChatTemplate

__all__ = ["MIN_PROMPT_CHARS", "system_part_chars"]

MIN_PROMPT_CHARS = 4096  # shorter prompts are read again faster than a second render
_SYSTEM_ROLES = frozenset({"system", "developer"})


def system_part_chars(
    template: ChatTemplate,
    conversation: Sequence[Mapping[str, object]],
    prompt: str,
    *,
    tools: Sequence[Mapping[str, object]],
    variables: Mapping[str, object],
) -> int:
    """How many characters of ``prompt`` (``conversation`` rendered by ``template``) its
    leading system messages and tools take, up to the next message's content; 0 when there
    are none, nothing follows them, the prompt is short or the template will not say."""
    count = next((i for i, m in enumerate(conversation) if m.get("role") not in _SYSTEM_ROLES), 0)
    if not count or len(prompt) < MIN_PROMPT_CHARS:
        return 0
    marker = f"<__next_message_{secrets.token_hex(8)}__>"
    probe = [*conversation[:count], {"role": conversation[count].get("role"), "content": marker}]
    try:
        head = template.render(probe, tools=tools, variables=variables, add_generation_prompt=False)
    except TemplateError:  # a template with more demands (a tool message's call id...)
        return 0
    at = head.find(marker)
    return _shared_chars(head[:at], prompt) if at > 0 else 0


def _shared_chars(a: str, b: str) -> int:
    """The length of the common start of ``a`` and ``b``, by halving: the slices compared
    add up to the shorter text once, compared at C speed."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    same, differs = 0, n  # a[:same] == b[:same]; the first difference is before ``differs``
    while differs - same > 1:
        middle = (same + differs) // 2
        if a[same:middle] == b[same:middle]:
            same = middle
        else:
            differs = middle
    return same
