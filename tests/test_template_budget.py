"""Chat templates render within a budget: time, loop iterations, string and list sizes, and
source size. Hostile templates are stopped before they allocate (peak memory is measured),
runaway ones stop themselves, and real templates render exactly as an unbudgeted sandbox
renders them."""

from __future__ import annotations

import datetime
import functools
import json
import tracemalloc

import pytest
from jinja2 import Environment
from jinja2.sandbox import ImmutableSandboxedEnvironment

from localllm.daemon.errors import TemplateBudgetError, TemplateError, TemplateRejectedError
from localllm.daemon.inference import templates
from localllm.daemon.inference.go_templates import to_jinja
from localllm.daemon.inference.template_budget import MAX_SOURCE_CHARS, Budget
from localllm.daemon.inference.templates import CHATML_TEMPLATE, ChatTemplate

USER = [{"role": "user", "content": "hi"}]
MEGA = "('x' * 1000000)"  # a legal million-character string, the seed of most blow-ups
SHARED = "{% set l = [" + MEGA + "] * 1000 %}"  # a thousand references to it: small in memory
GROWING = "{% set s = " + MEGA + " %}{% set ns = namespace(l=[]) %}{% for i in range(1000) %}"

BLOW_UPS = {  # each one builds a gigabyte or more without a budget
    "namespace doubling": "{% set ns = namespace(s='x' * 1024) %}{% for i in range(20) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    "concatenation": "{% set a = " + MEGA + " %}{% set b = a ~ a ~ a ~ a ~ a ~ a ~ a ~ a %}"
    "{% set c = b ~ b ~ b ~ b ~ b ~ b ~ b ~ b %}{{ (c ~ c) | length }}",
    "plus": "{% set a = " + MEGA + " %}{% set b = a + a + a + a + a + a + a + a + a %}",
    "repetition": "{{ 'x' * 10**9 }}",
    "list repetition": "{{ [1] * 10**8 }}",
    "power": "{{ ((2 ** 64) ** 64) ** 64 }}",
    "integer squaring": "{% set ns = namespace(n=3) %}{% for i in range(40) %}"
    "{% set ns.n = ns.n * ns.n %}{% endfor %}",
    "center": "{{ 'x' | center(10**9) }}",
    "ljust": "{{ 'x'.ljust(10**9) }}",
    "zfill of bytes": "{{ 'x'.encode().zfill(10**9) }}",
    "expandtabs": "{{ '\\t'.expandtabs(10**9) }}",
    "format filter width": "{{ '%1000000000s' | format('x') }}",
    "percent star width": "{{ '%*s' % (10**9, 'x') }}",
    "percent precision": "{{ '%.1000000000f' % 1.5 }}",
    "str.format width": "{{ '{:>1000000000}'.format('x') }}",
    "str.format repeats": "{{ ('{0}' * 100).format(" + MEGA + ") }}",
    "indent width": "{{ 'a\\nb' | indent(10**9) }}",
    "indent string": "{{ ('a\\n' * 1000) | indent(" + MEGA + ") }}",
    "lipsum": "{{ lipsum(10**6) }}",
    "replace": "{{ " + MEGA + " | replace('x', 'yyyyyyyyyy') }}",
    "str.replace": "{{ " + MEGA + ".replace('', 'yyyyyyyyyy') }}",
    "translate": "{{ " + MEGA + ".translate({120: 'y' * 1000}) }}",
    "wordwrap": "{{ " + MEGA + " | wordwrap(1, wrapstring='y' * 100) }}",
    "join of shared": SHARED + "{{ l | join }}",
    "str.join of shared": SHARED + "{{ ''.join(l) }}",
    "print shared": SHARED + "{{ l }}",
    "tojson shared": SHARED + "{{ l | tojson }}",
    "string of shared": SHARED + "{{ l | string | length }}",
    "nested sharing": "{% set ns = namespace(l=[1]) %}{% for i in range(60) %}"
    "{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l | length }}",
    "deep tuple": "{% set ns = namespace(t=()) %}{% for i in range(100000) %}"
    "{% set ns.t = (ns.t,) %}{% endfor %}{{ {ns.t: 1} | length }}",
    "many big strings": GROWING + "{% set ns.l = ns.l + [s ~ i] %}{% endfor %}",
    "many big slices": GROWING + "{% set ns.l = ns.l + [s[i:]] %}{% endfor %}",
    "block capture": "{% set s = " + MEGA + " %}{% set big %}{% for i in range(1000) %}"
    "{{ s }}{% endfor %}{% endset %}{{ big | length }}",
    "dict.fromkeys": "{{ dict.fromkeys(range(100000), " + MEGA + ") }}",
    "cycler": "{% set c = cycler(*([" + MEGA + "] * 1000)) %}{{ c.items | join }}",
    "batch fill": "{{ [1] | batch(10**9, fill_with=0) | list | length }}",
    "list of characters": "{{ ('x' * 8000000) | list | length }}",
    "urlize target": "{{ ('a.io ' * 100000) | urlize(target=" + MEGA + ") }}",
    "strftime": "{{ strftime_now(('%c' * 500000) ~ ('%c' * 500000)) }}",
}


@pytest.mark.parametrize("source", BLOW_UPS.values(), ids=BLOW_UPS.keys())
def test_blow_ups_are_stopped_before_they_take_memory(source):
    tracemalloc.start()
    try:
        with pytest.raises(TemplateBudgetError, match="went over its budget"):
            ChatTemplate(source).render(USER)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 << 20, f"peaked at {peak >> 20} MiB"


@pytest.mark.slow  # renders until the loop budget runs out (4 s)
def test_loops_are_counted(monkeypatch):
    nested = "{% for i in range(12000) %}{% for j in range(12000) %}{% endfor %}{% endfor %}"
    with monkeypatch.context() as far_deadline:  # a busy machine must not stop it first
        far_deadline.setattr(templates, "Budget", functools.partial(Budget, seconds=600))
        with pytest.raises(TemplateBudgetError, match="looped more than 1,000,000 times"):
            ChatTemplate(nested).render(USER)
    with pytest.raises(TemplateBudgetError, match=r"looped|ran longer"):  # recursive loops
        ChatTemplate(
            "{% for x in range(1000) recursive %}"
            "{% if loop.depth < 4 %}{{ loop(range(1000)) }}{% endif %}{% endfor %}"
        ).render(USER)
    with pytest.raises(TemplateBudgetError, match=r"looped|ran longer"):  # lazy filter results
        ChatTemplate("{{ [1] | slice(10**9) | list | length }}").render(USER)


@pytest.mark.slow  # waits out the render deadline
def test_a_runaway_render_stops_itself_at_its_deadline():
    doubling = (
        "{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}"
        "{{ f(0) }}"
    )
    with pytest.raises(TemplateBudgetError, match="ran longer than 2 s"):  # 2**60 calls
        ChatTemplate(doubling).render(USER)


def test_source_size_is_capped_before_parsing(monkeypatch):
    parsed: list[int] = []
    parse = Environment.parse
    monkeypatch.setattr(
        Environment,
        "parse",
        lambda env, source, *args: parsed.append(len(source)) or parse(env, source, *args),
    )
    ChatTemplate("a" * MAX_SOURCE_CHARS)
    assert parsed == [MAX_SOURCE_CHARS]  # the largest allowed is parsed (and seen parsed)
    with pytest.raises(TemplateBudgetError, match=r"2,883,582 characters.*at most 262,144"):
        ChatTemplate("{{ messages[0].content }}" * 115343 + "{{ x }}", "request")
    assert parsed == [MAX_SOURCE_CHARS]  # refused unread: parsing it would take half a minute


def test_nesting_too_deep_to_parse_is_a_template_error():
    for source in ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "{% if a %}" * 3000):
        with pytest.raises(TemplateError, match="does not parse"):
            ChatTemplate(source)


def test_go_templates_translate_in_linear_time():
    # A regex took minutes over a tenth of this: quadratic, it would outlast the suite's timeout.
    unclosed = "{{ .Prompt }}" + "{{ x" * 200_000
    assert to_jinja(unclosed).endswith('{{ x" }}')  # the unclosed rest is text


def test_a_template_cannot_make_an_error_message_huge():
    words = "(" + MEGA + " ~ " + MEGA + ")"
    with pytest.raises(TemplateRejectedError) as rejected:
        ChatTemplate("{{ raise_exception(" + words + ") }}").render(USER)
    with pytest.raises(TemplateError) as failed:
        ChatTemplate("{{ messages[" + words + "].a }}").render(USER)
    for caught in (rejected, failed):
        assert len(str(caught.value)) < 2000 and "(2,000,0" in str(caught.value)


def test_the_budget_is_per_render():
    loops = "{% for i in range(1000) %}{% for j in range(600) %}{% endfor %}{% endfor %}"
    template = ChatTemplate(loops + "{{ messages | length }}")  # 601,000 iterations
    assert [template.render(USER) for _ in range(3)] == ["1", "1", "1"]


# -- real templates render exactly as without a budget ----------------------------------------
LLAMA_STYLE = """{{- bos_token }}
{%- if tools is not none and tools %}
    {%- set ns = namespace(names=[]) %}
    {%- for tool in tools %}{% set ns.names = ns.names + [tool.function.name] %}{% endfor %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools %}
    {{- "Tools: " + ns.names | join(", ") + "\\n" }}
    {%- for t in tools %}{{- t | tojson(indent=4) }}{{ "\\n\\n" if not loop.last }}{% endfor %}
{%- endif %}
{{- system_message }}{{ "<|eot_id|>" }}
{%- for message in messages | rejectattr("role", "equalto", "ignored") %}
    {%- if message.role in ['user', 'system'] %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}
        {{- message['content'] | trim + '<|eot_id|>' }}
    {%- elif message.tool_calls %}
        {%- for call in message.tool_calls %}
            {{- '{"name": "' + call.function.name + '", "parameters": ' }}
            {{- call.function.arguments | tojson + "}" }}
        {%- endfor %}
        {{- "<|eot_id|>" }}
    {%- else %}
        {{- '<|start_header_id|>' ~ message.role ~ '<|end_header_id|>\\n\\n' }}
        {{- message.content ~ '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""
GEMMA_STYLE = """{%- macro show(value) -%}
    {%- if value is string -%}<{{ value }}>
    {%- elif value is mapping -%}{
        {%- for key, item in value | dictsort -%}
            {{ key }}:{{ show(item) }}{{ "," if not loop.last }}
        {%- endfor -%}}
    {%- elif value is sequence -%}[{%- for item in value -%}{{ show(item) }}{%- endfor -%}]
    {%- else -%}{{ value }}{%- endif -%}
{%- endmacro -%}
{{ bos_token }}
{%- for message in messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) and message.role != 'tool' -%}
        {{ raise_exception("roles must alternate user/assistant") }}
    {%- endif -%}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
    {{ '<start_of_turn>' + role + '\\n' + message['content'] | trim }}
    {%- for call in message.tool_calls or [] -%}{{ show(call.function) }}{%- endfor -%}
    {{ '<end_of_turn>\\n' }}
{%- endfor -%}
{%- for tool in tools or [] %}{{ show(tool) }}{% endfor -%}
{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}
"""
FILTERS = """{%- set roles = messages | map(attribute='role') | list -%}
{{ roles | unique | join(',') }}|{{ roles | length }}|{{ roles | sort | first }}|{{ roles | last }}
{{ messages | selectattr('role', 'equalto', 'user') | list | length }}
{{ messages[0].content | upper | center(30) }}|{{ 'a\\nb\\nc' | indent(2, first=True) }}
{{ '%s-%05d-%.2f' | format('x', 7, 3.14159) }}|{{ '{}:{:>4}'.format('k', 42) }}
{{ '%(a)s' % {'a': 1} }}
{{ messages[0].content | replace('i', 'I') | truncate(9) }}|{{ (messages[0].content * 3)[2:5] }}
{{ range(10) | batch(3) | list }}|{{ range(10) | slice(3) | list }}|{{ [3, 1, 2] | sum }}
{{ {'b': 1, 'a': 2} | dictsort }}|{{ {'b': 1, 'a': 2} | items | list }}
{{ [1, 2] | reverse | list }}
{{ messages | groupby('role') | map(attribute='grouper') | join('/') }}
{{ [1.55] | map('round', 1) | list }}
{{ ('word ' * 30) | wordwrap(20) }}|{{ ['a', 'b'] | tojson }}|{{ {'x': [1, (2, 3)]} | string }}
{%- set c = cycler('odd', 'even') %}{% set j = joiner(' + ') -%}
{% for i in range(4) %}{{ j() }}{{ c.next() }}{{ loop.cycle('<', '>') }}
{{- loop.changed(i // 2) }}{% endfor %}
{%- for x in [[1, [2]], [3]] recursive %}
({% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}{% endif %})
{%- endfor %}
{{ lipsum(2, html=False) | wordcount > 10 }}|{{ "%d" | format(2 ** 100) }}
{{ -3 | abs }}|{{ 7 // 2 }}|{{ 7 % 3 }}
"""


def plain_render(source: str, **context) -> str:
    """The template as the same sandbox renders it with no budget at all."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.loopcontrols"],
    )
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    env.filters["tojson"] = lambda value, indent=None: json.dumps(
        value, ensure_ascii=False, indent=indent
    )
    return env.from_string(source).render(**context)


def conversation(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "  Be brief. Ünïcode ✓  "}]
    for i in range(turns):
        call = {"id": f"call_{i}", "type": "function"}
        arguments = {"city": "Oslo", "days": [i, {"n": i}]}
        call["function"] = {"name": "get_weather", "arguments": arguments}
        messages += [
            {"role": "user", "content": f"question {i} " * 20},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "sunny"},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    return [*messages, {"role": "user", "content": "last"}]


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {}}},
]


@pytest.mark.parametrize("source", [CHATML_TEMPLATE, LLAMA_STYLE, GEMMA_STYLE, FILTERS])
@pytest.mark.parametrize("turns", [0, 2, 400])
def test_real_templates_render_as_without_a_budget(source, turns):
    messages = conversation(turns)[1:] if source is GEMMA_STYLE else conversation(turns)
    context = {"messages": messages, "tools": TOOLS, "bos_token": "<s>", "eos_token": "</s>"}
    expected = plain_render(source, add_generation_prompt=True, **context)
    assert ChatTemplate(source).render(**context) == expected


def test_raise_exception_still_rejects_under_the_budget():
    with pytest.raises(TemplateRejectedError, match="alternate"):
        ChatTemplate(GEMMA_STYLE).render([{"role": "assistant", "content": "first"}])
