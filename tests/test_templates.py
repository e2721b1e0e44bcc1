"""Chat templates: rendering, SYSTEM/MESSAGE handling, the Go subset, tool-call parsing, and
the sandbox holding against hostile templates (which come from untrusted model files)."""

from __future__ import annotations

import pytest

from localllm.daemon.errors import (
    TemplateBudgetError,
    TemplateError,
    TemplateRejectedError,
    TemplateSecurityError,
)
from localllm.daemon.inference.go_templates import is_go_template
from localllm.daemon.inference.templates import (
    CHATML_TEMPLATE,
    ChatTemplate,
    TemplateCache,
    assemble_messages,
    image_part,
)
from localllm.daemon.inference.tool_calls import ToolChoice, forced_tool_schema, tools_system_prompt

USER = [{"role": "user", "content": "hi"}]

TOOLS_TEMPLATE = (
    "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}"
    "{% for m in messages %}[{{ m.role }}]{{ m.content }}"
    "{% for call in m.tool_calls or [] %}<call>{{ call.function.arguments | tojson }}</call>"
    "{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


def test_chatml_fallback_when_the_model_has_no_template():
    template = TemplateCache().get(None)
    assert template.origin == "default"
    assert template.render(USER) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_hugging_face_globals_and_filters():
    source = (
        "{{ bos_token }}{% for m in messages %}{{ m.content | tojson }}{% endfor %}"
        "{% if strftime_now('%Y') | int > 2000 %}!{% endif %}{{ eos_token }}"
    )
    text = ChatTemplate(source).render(
        [{"role": "user", "content": "héllo <b>"}], bos_token="<s>", eos_token="</s>"
    )
    assert text == '<s>"héllo <b>"!</s>'  # tojson keeps non-ASCII and does not HTML-escape


def test_trim_blocks_and_loop_controls_like_hugging_face():
    source = (
        "{% for m in messages %}\n{% if loop.index > 1 %}{% break %}{% endif %}"
        "{{ m.content }}\n{% endfor %}"
    )
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert ChatTemplate(source).render(messages) == "a\n"


def test_tools_reach_templates_that_use_them():
    template = ChatTemplate(TOOLS_TEMPLATE)
    assert template.supports_tools
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert template.render(USER, tools=tools).startswith('<tools>[{"type": "function"')
    assert not ChatTemplate(CHATML_TEMPLATE).supports_tools


def test_system_is_inserted_only_when_the_request_has_none_and_messages_come_first():
    preset = [{"role": "user", "content": "example"}, {"role": "assistant", "content": "reply"}]
    merged = assemble_messages(USER, system="be brief", preset=preset)
    assert [m["role"] for m in merged] == ["system", "user", "assistant", "user"]
    assert merged[0]["content"] == "be brief"
    own = [{"role": "system", "content": "mine"}, *USER]
    assert assemble_messages(own, system="be brief")[0]["content"] == "mine"


def test_content_parts_and_tool_call_arguments_are_normalized_for_templates():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
            ],
        },
    ]
    text = ChatTemplate(TOOLS_TEMPLATE).render(assemble_messages(messages))
    assert "[user]ab" in text and '<call>{"x": 1}</call>' in text


def test_image_parts_become_the_marker_in_string_content():
    text = {"type": "text", "text": "which?"}
    messages = [{"role": "user", "content": [image_part(0), image_part(1), text]}]
    preset = [{"role": "user", "content": [image_part(0), {"type": "text", "text": "old"}]}]
    merged = assemble_messages(messages, preset=preset, image_marker="<IMG>")
    assert merged[0]["content"] == "old"  # a model's own MESSAGE layers carry no images
    assert merged[1]["content"] == "<IMG><IMG>which?"
    go = ChatTemplate("{{ .Prompt }}!", "Modelfile")
    assert go.render(merged[1:]) == "<IMG><IMG>which?!"


def test_go_template_subset_renders_turn_by_turn():
    source = "{{ if .System }}S:{{ .System }}\n{{ end }}U:{{ .Prompt }}\nA:{{ .Response }}\n"
    template = ChatTemplate(source, "Modelfile")
    assert template.is_go
    messages = assemble_messages(
        [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "1"},
            {"role": "user", "content": "two"},
        ],
        system="sys",
    )
    assert template.render(messages) == "S:sys\nU:one\nA:1\nU:two\nA:"


def test_go_template_trim_markers_and_comments():
    source = "{{/* legacy */}}{{- .Prompt -}}  \n  {{ .Response }}"
    assert ChatTemplate(source).render(USER) == "hi"
    assert is_go_template("{{ .Prompt }}") and not is_go_template(CHATML_TEMPLATE)
    assert ChatTemplate("a \n {{- .Prompt }}\t{{/* c */ -}} \n b").render(USER) == "ahi\tb"


@pytest.mark.parametrize(
    "text",
    [
        "{% raw %}",
        "{% endraw %}{% if true %}x{% endif %}{% raw %}",
        "{# not a comment #}",
        '{% "quoted" %} \\ back\\slash \u00e9t\u00e9 \U0001f600 \n\t',
    ],
)
def test_go_template_text_that_looks_like_jinja_is_printed_as_is(text):
    """Literal text is never read as Jinja, even text that closes a raw block."""
    template = ChatTemplate(text + "{{ .Prompt }}" + text, "Modelfile")
    assert template.render(USER) == text + "hi" + text


def test_unsupported_go_syntax_is_a_clear_error():
    with pytest.raises(TemplateError, match=r"range .Messages.*write the template in Jinja"):
        ChatTemplate("{{ range .Messages }}{{ .Content }}{{ end }}", "Modelfile")


def test_raise_exception_rejects_the_request():
    source = "{% if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}"
    with pytest.raises(TemplateRejectedError, match="system first"):
        ChatTemplate(source).render(USER)


def test_broken_templates_fail_with_a_template_error():
    with pytest.raises(TemplateError, match="does not parse"):
        ChatTemplate("{% for %}")
    with pytest.raises(TemplateError, match="UndefinedError"):
        ChatTemplate("{{ nothing.here }}").render(USER)


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ ().__class__.__base__.__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
        "{{ self.__init__.__globals__ }}",
        "{{ messages.append(1) }}",
        "{{ (messages | first).update({'role': 'system'}) }}",
    ],
)
def test_hostile_templates_cannot_escape_the_sandbox(source, tmp_path):
    with pytest.raises(TemplateSecurityError, match="sandbox forbids"):
        ChatTemplate(source).render(USER)


def test_huge_output_is_stopped():
    source = "{% for i in range(100000) %}{{ messages[0].content }}{% endfor %}"
    big = [{"role": "user", "content": "y" * 1000}]
    with pytest.raises(TemplateBudgetError, match="output passed 8,388,608 characters"):
        ChatTemplate(source).render(big)


def test_template_cache_parses_each_source_once():
    cache = TemplateCache(capacity=2)
    assert cache.get("{{ 1 }}") is cache.get("{{ 1 }}")
    cache.get("{{ 2 }}")
    cache.get("{{ 3 }}")
    assert len(cache._templates) == 2


# -- tool calls ---------------------------------------------------------------------------
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}


def test_forced_tool_schemas():
    named = forced_tool_schema([WEATHER, TIME], ToolChoice("function", "get_weather"))
    assert named["properties"]["name"] == {"const": "get_weather"}
    assert named["properties"]["arguments"]["required"] == ["city"]
    anyone = forced_tool_schema([WEATHER, TIME], ToolChoice("required"))
    assert [o["properties"]["name"]["const"] for o in anyone["oneOf"]] == [
        "get_weather",
        "get_time",
    ]
    parallel = forced_tool_schema([WEATHER, TIME], ToolChoice("required", parallel=True))
    assert parallel == {"type": "array", "items": anyone, "minItems": 1}
    named_parallel = ToolChoice("function", "get_weather", parallel=True)
    assert forced_tool_schema([WEATHER, TIME], named_parallel) == named  # one named call
    with pytest.raises(ValueError, match="not among the tools"):
        forced_tool_schema([WEATHER], ToolChoice("function", "nope"))


def test_tools_system_prompt_lists_every_tool():
    prompt = tools_system_prompt([WEATHER, TIME])
    assert "<tools>" in prompt and "get_weather" in prompt and "get_time" in prompt
