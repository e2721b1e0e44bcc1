"""Thinking styles for tiny test models: the chat templates and marker tokens of two families.

``qwen3``: Qwen3's template conventions. ``<think>`` and ``</think>`` are user-defined tokens
(llama.cpp renders them in the output), ``enable_thinking=false`` writes an empty thinking
block into the generation prompt, and otherwise the generation prompt opens ``<think>\\n``
(as DeepSeek-R1 and Qwen3's thinking-only models do), so the output starts inside thinking.
Past turns' ``reasoning_content`` is rendered for the turns after the last user message.

``gpt-oss``: OpenAI's "harmony" format. Its markers are control tokens (``<|channel|>``,
``<|message|>``...) that llama.cpp leaves out of the output unless asked to keep them; the
system message carries ``Reasoning: {reasoning_effort}`` (medium by default); the model
answers ``<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final
<|message|>...<|return|>``. Past turns' ``thinking`` is rendered after the last user message.

A random-weight model never writes a marker by itself (they are among its quiet tokens), which
is what makes tests that open the thinking block and end it by a budget deterministic.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["HARMONY_TEMPLATE", "QWEN3_TEMPLATE", "ThinkingStyle", "style_template", "style_tokens"]

ThinkingStyle = Literal["none", "qwen3", "gpt-oss"]

_LAST_USER = (
    "{%- set ns = namespace(last_user=-1) %}"
    "{%- for message in messages %}{%- if message.role == 'user' %}"
    "{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}"
)

QWEN3_TEMPLATE = (
    _LAST_USER + "{%- for message in messages %}"
    "{%- if message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if message.reasoning_content and loop.index0 > ns.last_user %}"
    "{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{{- message.content + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}{{- '<think>\\n' }}{%- endif %}"
    "{%- endif %}"
)

HARMONY_TEMPLATE = (
    "{{- '<|start|>system<|message|>You are a tiny test model.\\nReasoning: ' }}"
    "{{- reasoning_effort if reasoning_effort is defined else 'medium' }}"
    "{{- '\\n\\n# Valid channels: analysis, commentary, final.<|end|>' }}"
    + _LAST_USER
    + "{%- for message in messages %}"
    "{%- if message.role in ('system', 'developer') %}"
    "{{- '<|start|>developer<|message|># Instructions\\n\\n' + message.content + '<|end|>' }}"
    "{%- elif message.role == 'assistant' %}"
    "{%- if message.thinking and loop.index0 > ns.last_user %}"
    "{{- '<|start|>assistant<|channel|>analysis<|message|>' + message.thinking + '<|end|>' }}"
    "{%- endif %}"
    "{{- '<|start|>assistant<|channel|>final<|message|>' + message.content + '<|end|>' }}"
    "{%- else %}"
    "{{- '<|start|>' + message.role + '<|message|>' + message.content + '<|end|>' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}"
)

_HARMONY_TOKENS = (
    *("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>"),
    *("<|return|>", "<|call|>"),
)


def style_tokens(style: ThinkingStyle) -> tuple[tuple[str, ...], bool]:
    """The style's marker tokens, and whether they are control tokens (else user-defined)."""
    if style == "qwen3":
        return ("<think>", "</think>"), False
    if style == "gpt-oss":
        return _HARMONY_TOKENS, True
    if style == "none":
        return (), False
    raise ValueError("thinking must be 'none', 'qwen3' or 'gpt-oss'")


def style_template(style: ThinkingStyle) -> str | None:
    """The style's chat template (None: keep the caller's)."""
    return {"qwen3": QWEN3_TEMPLATE, "gpt-oss": HARMONY_TEMPLATE}.get(style)
