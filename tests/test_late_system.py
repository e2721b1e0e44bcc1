"""System messages past the first place, folded for templates that refuse them there."""

from __future__ import annotations

import pytest

from localllm.daemon.errors import TemplateRejectedError
from localllm.daemon.inference import late_system
from localllm.daemon.inference.late_system import fold_late_system
from localllm.daemon.inference.templates import ChatTemplate
from tests.support.work_count import lines_run

# Gemma's and Mistral's rule: one system message, first, or the template raises
STRICT = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' and not loop.first %}"
    "{{ raise_exception('System message must be first') }}{% endif %}"
    "<|{{ m['role'] }}|>{{ m['content'] if m['content'] is string else m['content'][0]['text'] }}"
    "{% endfor %}"
)


def test_a_conversation_with_one_leading_system_message_is_left_alone():
    first = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert fold_late_system(first) is None
    assert fold_late_system([{"role": "user", "content": "U"}]) is None
    assert fold_late_system([{"role": "system", "content": "S"}]) is None


def test_leading_system_messages_become_one_and_late_ones_join_a_user_message():
    folded = fold_late_system(
        [
            {"role": "system", "content": "Rules."},
            {"role": "system", "content": [{"type": "text", "text": "More rules."}]},
            {"role": "user", "content": "Hello"},
            {"role": "system", "content": "The cwd is /tmp."},
            {"role": "assistant", "content": "Hi"},
            {"role": "user", "content": [{"type": "text", "text": "Go on"}]},
            {"role": "system", "content": "Tools changed."},
        ]
    )
    assert folded == [
        {"role": "system", "content": "Rules.\n\nMore rules."},
        {"role": "user", "content": "Hello\n\nThe cwd is /tmp."},
        {"role": "assistant", "content": "Hi"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Go on"},
                {"type": "text", "text": "Tools changed."},
            ],
        },
    ]


def test_a_late_system_message_before_any_user_message_joins_the_next_one():
    folded = fold_late_system(
        [
            {"role": "assistant", "content": "Hi"},
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello"},
        ]
    )
    assert folded == [
        {"role": "assistant", "content": "Hi"},
        {"role": "user", "content": "Be brief.\n\nHello"},
    ]
    alone = fold_late_system(
        [{"role": "assistant", "content": "Hi"}, {"role": "system", "content": "S"}]
    )
    assert alone == [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "S"}]


def test_the_folded_conversation_renders_where_the_strict_template_refused():
    template = ChatTemplate(STRICT)
    conversation = [
        {"role": "system", "content": "Rules."},
        {"role": "user", "content": "Hello"},
        {"role": "system", "content": "The cwd is /tmp."},
    ]
    with pytest.raises(TemplateRejectedError, match="System message must be first"):
        template.render(conversation)
    assert template.render(fold_late_system(conversation)) == (
        "<|system|>Rules.<|user|>Hello\n\nThe cwd is /tmp."
    )


def agent_chat(turns: int, parts: bool = False) -> list[dict[str, object]]:
    """A user message, then ``turns`` assistant and late system messages in turn."""
    user = [{"type": "text", "text": "U"}] if parts else "U"
    chat: list[dict[str, object]] = [{"role": "user", "content": user}]
    for turn in range(turns):
        chat += [
            {"role": "assistant", "content": f"A{turn}"},
            {"role": "system", "content": f"S{turn}"},
        ]
    return chat


@pytest.mark.parametrize("parts", [False, True], ids=["string", "parts"])
def test_thousands_of_late_system_messages_are_folded_in_one_pass(parts):
    """A chat of 12,000 late system messages took 13.5 s in the render pool: each was joined
    to the user message by searching back for it and rebuilding its text."""
    work = {n: lines_run(lambda n=n: fold_late_system(agent_chat(n, parts)), late_system)
            for n in (500, 2000)}  # fmt: skip
    assert work[2000] < 5 * work[500], work  # linear: about 4x; the quadratic fold was 16x
    folded = fold_late_system(agent_chat(12_000, parts))
    assert len(folded) == 12_001 and folded[0]["role"] == "user"
    late = [f"S{turn}" for turn in range(12_000)]
    if parts:
        assert folded[0]["content"] == [{"type": "text", "text": t} for t in ["U", *late]]
    else:
        assert folded[0]["content"] == "\n\n".join(["U", *late])
    assert [m["content"] for m in folded[1:]] == [f"A{turn}" for turn in range(12_000)]
