"""Modelfile parsing, its errors (with line numbers), and rendering that parses back equal."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localllm.model_registry.errors import ModelfileError
from localllm.model_registry.modelfile import (
    PARAMETER_TYPES,
    Adapter,
    Modelfile,
    from_is_path,
    parse_modelfile,
    render_modelfile,
)
from localllm.model_registry.parameters import OPTIONS

FULL = '''\
# A comment, then a blank line

FROM qwen2.5:0.5b
PARAMETER temperature 0.7
parameter num_ctx 4096
PARAMETER stop "<|im_end|>"
PARAMETER stop <|im_start|>
PARAMETER penalize_newline false
SYSTEM """You are
  a "helpful" bot.
"""
TEMPLATE """{{ .Prompt }}"""
MESSAGE user hi there
MESSAGE assistant "hello \\"you\\""
LICENSE MIT
license """Apache
2.0"""
ADAPTER ./lora.gguf
ADAPTER ./style.gguf 0.5
'''


def test_full_modelfile():
    assert parse_modelfile(FULL) == Modelfile(
        from_="qwen2.5:0.5b",
        system='You are\n  a "helpful" bot.\n',
        template="{{ .Prompt }}",
        parameters={
            "temperature": 0.7,
            "num_ctx": 4096,
            "stop": ["<|im_end|>", "<|im_start|>"],
            "penalize_newline": False,
        },
        license=["MIT", "Apache\n2.0"],
        messages=[("user", "hi there"), ("assistant", 'hello "you"')],
        adapters=[Adapter("./lora.gguf"), Adapter("./style.gguf", 0.5)],
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FROM llama3", Modelfile(from_="llama3")),
        ("from llama3\n", Modelfile(from_="llama3")),
        ("  FrOm   llama3   \n", Modelfile(from_="llama3")),
        ("\tFROM\tllama3", Modelfile(from_="llama3")),
        ("FROM llama3\r\nSYSTEM hi\r\n", Modelfile(from_="llama3", system="hi")),
        ('FROM "./my model.gguf"', Modelfile(from_="./my model.gguf")),
        ("FROM m\nSYSTEM a # not a comment", Modelfile(from_="m", system="a # not a comment")),
        ("FROM m\n  # indented comment\nSYSTEM x", Modelfile(from_="m", system="x")),
        ('FROM m\nSYSTEM """"""', Modelfile(from_="m", system="")),
        ('FROM m\nSYSTEM ""', Modelfile(from_="m", system="")),
        ('FROM m\nSYSTEM """ padded """  ', Modelfile(from_="m", system=" padded ")),
        ('FROM m\nSYSTEM """\nline\n"""', Modelfile(from_="m", system="\nline\n")),
        ('FROM m\nSYSTEM """a\n\n# kept\n\nb"""', Modelfile(from_="m", system="a\n\n# kept\n\nb")),
        ('FROM m\nSYSTEM "back\\\\slash"', Modelfile(from_="m", system="back\\slash")),
        ("FROM m\nSYSTEM one\nSYSTEM two", Modelfile(from_="m", system="two")),
        ("FROM m\nTEMPLATE {{ .Prompt }}", Modelfile(from_="m", template="{{ .Prompt }}")),
        ("FROM m\nMESSAGE SYSTEM be nice", Modelfile(from_="m", messages=[("system", "be nice")])),
        (
            'FROM m\nMESSAGE assistant """multi\nline"""',
            Modelfile(from_="m", messages=[("assistant", "multi\nline")]),
        ),
        ("FROM m\nPARAMETER TOP_K 40", Modelfile(from_="m", parameters={"top_k": 40})),
        (
            "FROM m\nPARAMETER seed 1\nPARAMETER seed 2",
            Modelfile(from_="m", parameters={"seed": 2}),
        ),
        ('FROM m\nPARAMETER stop ""', Modelfile(from_="m", parameters={"stop": [""]})),
        ("FROM m\nPARAMETER stop User: ", Modelfile(from_="m", parameters={"stop": ["User:"]})),
        ('FROM m\nPARAMETER stop "User: "', Modelfile(from_="m", parameters={"stop": ["User: "]})),
        (
            "FROM m\nADAPTER a\nADAPTER b",
            Modelfile(from_="m", adapters=[Adapter("a"), Adapter("b")]),
        ),
    ],
)
def test_parses(text, expected):
    assert parse_modelfile(text) == expected


@pytest.mark.parametrize(
    ("line", "adapter"),
    [
        ("ADAPTER ./lora.gguf", Adapter("./lora.gguf", 1.0)),
        ("ADAPTER ./lora.gguf 0.5", Adapter("./lora.gguf", 0.5)),
        ("ADAPTER ./lora.gguf -2", Adapter("./lora.gguf", -2.0)),
        ("ADAPTER ./lora.gguf 0", Adapter("./lora.gguf", 0.0)),
        ("ADAPTER ./my lora.gguf", Adapter("./my lora.gguf")),  # Ollama's bare paths still work
        ("ADAPTER ./my lora.gguf 1.5", Adapter("./my lora.gguf", 1.5)),
        ('ADAPTER "./lora 2"', Adapter("./lora 2")),  # quoted: the last word is the path's
        ('ADAPTER "./lora 2" 0.25', Adapter("./lora 2", 0.25)),
        ('ADAPTER """./lora\n2""" 3', Adapter("./lora\n2", 3.0)),
        ("ADAPTER 0.5", Adapter("0.5")),  # one word is the path
    ],
)
def test_adapter_path_and_scale(line, adapter):
    assert parse_modelfile(f"FROM m\n{line}").adapters == [adapter]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ADAPTER ./lora.gguf 11", "ADAPTER scale must be a number from -10 to 10, got '11'"),
        ('ADAPTER "./lora.gguf" strong', "ADAPTER scale must be a number from -10 to 10"),
        ('ADAPTER "./lora.gguf" nan', "ADAPTER scale must be a number"),
        ('ADAPTER ""', "ADAPTER needs the path of a LoRA adapter file"),
        ('ADAPTER "" 0.5', "ADAPTER needs the path of a LoRA adapter file"),
    ],
)
def test_bad_adapter_lines(line, message):
    with pytest.raises(ModelfileError, match=message) as caught:
        parse_modelfile(f"FROM m\n{line}")
    assert caught.value.line == 2


@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        ("num_ctx", "8192", 8192),
        ("num_predict", "-1", -1),
        ("num_gpu", "0", 0),
        ("num_thread", "+8", 8),
        ("num_batch", "512", 512),
        ("num_keep", "4", 4),
        ("num_draft", "0", 0),
        ("temperature", "0", 0.0),
        ("temperature", "1.5", 1.5),
        ("top_k", "40", 40),
        ("top_p", ".9", 0.9),
        ("min_p", "5e-2", 0.05),
        ("typical_p", "1", 1.0),
        ("repeat_penalty", "1.1", 1.1),
        ("repeat_last_n", "64", 64),
        ("presence_penalty", "-0.5", -0.5),
        ("frequency_penalty", "0.5", 0.5),
        ("seed", "42", 42),
        ("mirostat", "2", 2),
        ("mirostat_eta", "0.1", 0.1),
        ("mirostat_tau", "5.0", 5.0),
        ("penalize_newline", "TRUE", True),
        ("penalize_newline", "0", False),
        ("stop", "###", ["###"]),
        ("kv_cache_type", "q8_0", "q8_0"),
        ("flash_attention", "on", "on"),
        ("num_cpu_moe", "12", 12),
        ("deterministic", "true", True),
    ],
)
def test_parameter_types(key, raw, value):
    parsed = parse_modelfile(f"FROM m\nPARAMETER {key} {raw}").parameters[key]
    assert parsed == value and type(parsed) is type(value)


def test_every_parameter_has_a_type_case():
    assert set(PARAMETER_TYPES) <= {
        "num_ctx", "num_predict", "num_gpu", "num_cpu_moe", "num_thread", "num_batch", "num_keep",
        "num_draft",
        "temperature", "top_k", "top_p", "min_p", "typical_p", "repeat_penalty",
        "repeat_last_n", "presence_penalty", "frequency_penalty", "seed", "stop", "mirostat",
        "mirostat_eta", "mirostat_tau", "penalize_newline", "kv_cache_type", "flash_attention",
        "load_anyway", "deterministic",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("", None, "needs a FROM"),
        ("# only a comment\n\n", None, "needs a FROM"),
        ("SYSTEM hi", None, "needs a FROM"),
        ("FROM a\nFROM b", 2, "FROM is given twice"),
        ("FROM a\nFORM b", 2, "unknown instruction 'FORM'"),
        ("FROM", 1, "FROM needs a value"),
        ("FROM   ", 1, "FROM needs a value"),
        ('FROM ""', 1, "FROM needs a model name"),
        ("FROM m\nSYSTEM", 2, "SYSTEM needs a value"),
        ("FROM m\nPARAMETER", 2, "PARAMETER needs a name"),
        ("FROM m\nPARAMETER temperature", 2, "PARAMETER needs a value"),
        ("FROM m\nPARAMETER temprature 0.5", 2, "unknown parameter 'temprature'"),
        ("FROM m\n\nPARAMETER num_ctx 4k", 3, "num_ctx needs an integer"),
        ("FROM m\nPARAMETER num_ctx 1.5", 2, "num_ctx needs an integer"),
        ("FROM m\nPARAMETER temperature hot", 2, "temperature needs a number"),
        ("FROM m\nPARAMETER temperature nan", 2, "temperature needs a number"),
        ("FROM m\nPARAMETER temperature 1e999", 2, "temperature needs a number"),
        ("FROM m\nPARAMETER penalize_newline maybe", 2, "needs true or false"),
        # the ranges every path applies (model_registry.parameters)
        ("FROM m\nPARAMETER repeat_last_n 250000000", 2, "between -1 and 16777216"),
        ("FROM m\nPARAMETER num_ctx 2147483647", 2, "num_ctx must be an integer between 0"),
        ("FROM m\nPARAMETER kv_cache_type q5_1", 2, "kv_cache_type must be one of f16, q8_0"),
        ("FROM m\nPARAMETER top_k -5", 2, "top_k must be an integer between -1"),
        ("FROM m\nPARAMETER temperature 2.5", 2, "temperature must be a number between 0 and 2"),
        ("FROM m\nPARAMETER top_p 1.01", 2, "top_p must be a number between 0 and 1"),
        ("FROM m\nPARAMETER seed 9223372036854775808", 2, "seed must be an integer between"),
        ("FROM m\nPARAMETER num_keep " + "9" * 5000, 2, "num_keep needs an integer"),
        ("FROM m\n" + "PARAMETER stop x\n" * 17, 18, "at most 16 strings"),
        ("FROM m\nPARAMETER stop " + "x" * 257, 2, "of at most 256 characters"),
        ("FROM m\nMESSAGE", 2, "MESSAGE needs a role"),
        ("FROM m\nMESSAGE tool hello", 2, "MESSAGE role must be one of"),
        ("FROM m\nMESSAGE user", 2, "MESSAGE needs a value"),
        ('FROM m\nSYSTEM """never\nclosed\n', 2, 'unterminated """'),
        ('FROM m\n\nTEMPLATE """{{ .Prompt }}""" extra', 3, 'after the closing """'),
        ('FROM m\nSYSTEM """a\nb""" extra', 3, 'after the closing """'),
        ('FROM m\nSYSTEM "open', 2, "unterminated quoted string"),
        ('FROM m\nSYSTEM "a" b', 2, "after the closing quote"),
        ('FROM m\nSYSTEM "a\\"', 2, "unterminated quoted string"),
    ],
)
def test_errors_carry_the_line_number(text, line, message):
    with pytest.raises(ModelfileError) as caught:
        parse_modelfile(text)
    assert caught.value.line == line
    assert message in str(caught.value)


def test_full_modelfile_round_trips():
    parsed = parse_modelfile(FULL)
    assert parse_modelfile(parsed.to_text()) == parsed
    assert render_modelfile(parsed) == parsed.to_text()
    assert parsed.to_text().startswith("FROM qwen2.5:0.5b\n")


def test_draft_names_a_model_or_a_file_and_round_trips():
    by_name = parse_modelfile("FROM big\ndraft small:1b\n")
    assert by_name.draft == "small:1b"
    by_path = parse_modelfile('FROM big\nDRAFT "./my drafts/small.gguf"\n')
    assert by_path.draft == "./my drafts/small.gguf"
    for parsed in (by_name, by_path):
        assert parse_modelfile(parsed.to_text()) == parsed
    assert "DRAFT small:1b\n" in by_name.to_text()
    assert parse_modelfile("FROM big\n").draft is None
    with pytest.raises(ModelfileError, match="line 2: DRAFT needs a value"):
        parse_modelfile("FROM big\nDRAFT\n")


def test_rendering_refuses_what_cannot_be_written():
    with pytest.raises(ModelfileError):
        render_modelfile(Modelfile(from_="m", system='two\nlines and """'))


# Text a Modelfile can hold, with the characters that need quoting mixed in.
_text = st.text(st.sampled_from([*'ab #"\\\t\n\r\x0b:{}', "\u00e9", "\u2028"]), max_size=30)
_single_line = _text.map(lambda t: t.replace("\n", ""))
_writable = _text.filter(
    lambda t: "\n" not in t or ('"""' not in t and "\r" not in t and not t.endswith('"'))
)


def _parameter_values(key: str):
    """Any value the table accepts for ``key``."""
    parameter = OPTIONS[key]
    if parameter.choices:
        return st.sampled_from(parameter.choices)
    if parameter.kind is int:
        return st.integers(parameter.low, parameter.high)
    if parameter.kind is float:
        return st.floats(parameter.low, parameter.high)
    return st.booleans() if parameter.kind is bool else _single_line


@st.composite
def modelfiles(draw) -> Modelfile:
    keys = draw(st.lists(st.sampled_from(sorted(PARAMETER_TYPES)), unique=True, max_size=5))
    parameters: dict[str, object] = {}
    for key in keys:
        if key == "stop":
            parameters[key] = draw(st.lists(_parameter_values(key), min_size=1, max_size=3))
        else:
            parameters[key] = draw(_parameter_values(key))
    return Modelfile(
        from_=draw(_writable.filter(lambda t: t.strip() != "")),
        system=draw(st.none() | _writable),
        template=draw(st.none() | _writable),
        parameters=parameters,
        license=draw(st.lists(_writable, max_size=2)),
        messages=draw(
            st.lists(
                st.tuples(st.sampled_from(["system", "user", "assistant"]), _writable), max_size=3
            )
        ),
        adapters=draw(
            st.lists(
                st.builds(
                    Adapter,
                    _writable.filter(lambda t: t.strip() != ""),
                    st.floats(-10, 10, allow_nan=False),
                ),
                max_size=2,
            )
        ),
        draft=draw(st.none() | _writable.filter(lambda t: t.strip() != "")),
    )


@settings(max_examples=200, deadline=None)
@given(modelfiles())
def test_render_then_parse_is_identity(modelfile):
    assert parse_modelfile(render_modelfile(modelfile)) == modelfile


@given(st.text(max_size=200))
def test_arbitrary_text_parses_or_raises_modelfile_error(text):
    try:
        parse_modelfile(text)
    except ModelfileError as error:
        assert error.line is None or 1 <= error.line <= text.count("\n") + 1


@pytest.mark.parametrize(
    ("value", "is_path"),
    [
        ("./model.gguf", True),
        ("../models/x", True),
        ("/abs/path", True),
        ("~/models/x", True),
        ("model.GGUF", True),
        ("C:\\models\\x", True),
        (".\\x", True),
        (".", True),
        ("llama3", False),
        ("llama3:8b", False),
        ("hf.co/org/repo:Q4_K_M", False),
        ("library/qwen2.5", False),
    ],
)
def test_from_is_path(value, is_path):
    assert from_is_path(value) is is_path
