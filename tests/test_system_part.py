"""Where a chat prompt's system part ends (``daemon.inference.system_part``): what the runner
of a sliding-window model checkpoints so another session with the same system prompt resumes
there. Real templates: ChatML, one that folds the system prompt into the first user turn (as
Gemma's does), and one that refuses a render without a generation prompt."""

from __future__ import annotations

from localllm.daemon.inference.system_part import MIN_PROMPT_CHARS, system_part_chars
from localllm.daemon.inference.templates import ChatTemplate
from localllm.model_registry.tiny_gguf import CHATML_TEMPLATE

FOLDING = (
    "{{ bos_token }}{% set first = messages[0]['content'] + '\\n\\n' "
    "if messages[0]['role'] == 'system' else '' %}"
    "{% for m in messages if m['role'] != 'system' %}"
    "<start_of_turn>{{ m['role'] }}\n{{ first if loop.first else '' }}{{ m['content'] }}"
    "<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
WANTS_ANSWER = (  # a template that wants the last message to be the user's, answered
    "{% if not add_generation_prompt %}"
    "{{ raise_exception('the conversation must end with a prompt') }}{% endif %}" + CHATML_TEMPLATE
)
SYSTEM = "You are a coding agent. Follow the rules below. " * 200  # ~10,000 characters


def _conversation(user: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _part(source: str, conversation: list[dict]) -> tuple[str, int]:
    template = ChatTemplate(source)
    prompt = template.render(conversation)
    return prompt, system_part_chars(template, conversation, prompt, tools=(), variables={})


def test_the_system_part_ends_where_the_first_other_message_starts():
    prompt, chars = _part(CHATML_TEMPLATE, _conversation("Fix the bug."))
    assert prompt[chars:].startswith("Fix the bug.")
    assert prompt[:chars].endswith("<|im_end|>\n<|im_start|>user\n")
    assert SYSTEM in prompt[:chars]
    other, other_chars = _part(CHATML_TEMPLATE, _conversation("Write a test."))
    assert other_chars == chars and other[:chars] == prompt[:chars]  # sessions share it


def test_a_system_prompt_folded_into_the_first_turn_ends_before_the_users_words():
    prompt, chars = _part(FOLDING, _conversation("Fix the bug."))
    assert prompt[chars:] == "Fix the bug.<end_of_turn>\n<start_of_turn>model\n"


def test_nothing_is_marked_without_a_system_part_a_long_prompt_or_a_willing_template():
    assert _part(CHATML_TEMPLATE, [{"role": "user", "content": SYSTEM}])[1] == 0
    assert _part(CHATML_TEMPLATE, _conversation("hi")[:1])[1] == 0  # nothing follows it
    short = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert len(_part(CHATML_TEMPLATE, short)[0]) < MIN_PROMPT_CHARS
    assert _part(CHATML_TEMPLATE, short)[1] == 0
    assert _part(WANTS_ANSWER, _conversation("Fix the bug."))[1] == 0
