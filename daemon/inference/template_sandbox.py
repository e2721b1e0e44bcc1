"""The sandbox chat templates render in, with a budget on every step.

Jinja2's ``ImmutableSandboxedEnvironment`` (a non-sandboxed renderer was CVE-2024-34359) keeps
templates away from Python's internals and from mutating their inputs; it does nothing about
time or memory. Here every hook the sandbox has (calls, attribute and item lookups, operators)
and every filter charges the render's ``Budget`` (``template_budget``), sizing the operations
that multiply their input first (``template_checks``). What the sandbox cannot intercept is
routed through hook filters when the template is compiled (``budget_hooks``): each ``for``
loop's items, ``~`` concatenation, slices (``s[1:]`` copies) and list, tuple and dict
literals. Output goes through ``finalize``, which sizes what it prints.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping
from functools import update_wrapper
from types import BuiltinMethodType, MethodType

from jinja2 import nodes, pass_context
from jinja2.runtime import Context, LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Cycler, generate_lorem_ipsum
from jinja2.utils import Namespace as JinjaNamespace
from jinja2.visitor import NodeTransformer

from localllm.daemon.errors import TemplateBudgetError
from localllm.daemon.inference.template_budget import BudgetedLoop, current_budget
from localllm.daemon.inference.template_checks import (
    check_binop,
    check_filter,
    check_method,
    format_size,
)

__all__ = ["BudgetedSandbox", "Rejected", "budget_hooks", "sandbox"]

_LOOP, _CONCAT, _BUILT = "budgeted_loop", "budgeted_concat", "budgeted_value"
_MAX_LIPSUM_WORDS = 100_000
_MAX_DATE_FORMAT = 1000


class Rejected(Exception):
    """Raised by a template's ``raise_exception``."""


class BudgetedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, charging the current render's budget at every hook."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def call_binop(self, context: Context, operator: str, left: object, right: object) -> object:
        budget = current_budget()
        budget.tick()
        check_binop(budget, operator, left, right)
        result = super().call_binop(context, operator, left, right)
        if operator == "+":
            return budget.charge_sum(result, left, right)
        return budget.charge(result)

    def getattr(self, obj: object, attribute: str) -> object:
        current_budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: object, argument: object) -> object:
        current_budget().tick()
        return super().getitem(obj, argument)

    def call(__self, __context: Context, __obj: object, *args: object, **kwargs: object) -> object:
        budget = current_budget()
        budget.tick()
        if isinstance(__obj, LoopContext) and args:  # a recursive loop's next level
            args = (BudgetedLoop(args[0], budget), *args[1:])
        elif __obj is Cycler or (
            isinstance(__obj, Macro) and (__obj.catch_varargs or __obj.catch_kwargs)
        ):  # they keep their arguments, which may share parts: size them as built
            budget.check_structure(args)
            budget.check_structure(kwargs)
        args = check_method(budget, __obj, args, kwargs)
        return budget.charge(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: object) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        if not isinstance(value, MethodType | BuiltinMethodType) or not isinstance(
            value.__self__, str
        ):  # never: jinja wraps only a string's bound format or format_map
            return wrapped
        fmt, is_map = value.__self__, value.__name__ == "format_map"

        def checked(*args: object, **kwargs: object) -> str:
            budget = current_budget()
            mapping = args[0] if is_map and args and isinstance(args[0], Mapping) else kwargs
            budget.allow_string(format_size(budget, fmt, () if is_map else args, mapping))
            return wrapped(*args, **kwargs)

        return update_wrapper(checked, value)


class Namespace(JinjaNamespace):
    """``namespace()``, printed without its contents: a namespace can be changed after it is
    put in a list, so what it holds is never sized (a chain of them could print for ever)."""

    def __repr__(self) -> str:
        return "<Namespace>"


def sandbox(hugging_face_style: bool) -> BudgetedSandbox:
    """The environment every chat template compiles in."""
    env = BudgetedSandbox(
        trim_blocks=hugging_face_style,
        lstrip_blocks=hugging_face_style,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.loopcontrols"],
        autoescape=False,
        finalize=_finalize,
    )
    env.globals.update(
        raise_exception=_raise_exception,
        strftime_now=_strftime_now,
        lipsum=_lipsum,
        namespace=Namespace,
    )
    env.filters["tojson"] = _tojson
    env.filters = {name: _budgeted(name, f) for name, f in env.filters.items()}
    env.filters.update({_LOOP: _loop, _CONCAT: _concat, _BUILT: _built})
    return env


def budget_hooks(template: nodes.Template, env: BudgetedSandbox) -> nodes.Template:
    """Route what the sandbox cannot intercept through the hook filters."""
    hooked = _Hooks(env).visit(template)
    if not isinstance(hooked, nodes.Template):  # never: a Template visits to itself
        raise TypeError("the template hooks replaced the template node")
    return hooked


class _Hooks(NodeTransformer):
    def __init__(self, env: BudgetedSandbox):
        self.env = env

    def _through(self, node: nodes.Node, name: str) -> nodes.Filter:
        hook = nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)
        hook.set_environment(self.env)
        return hook

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = self._through(node.iter, _LOOP)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Filter:
        self.generic_visit(node)
        parts = nodes.List(node.nodes, lineno=node.lineno).set_environment(self.env)
        return self._through(parts, _CONCAT)

    def _literal(self, node: nodes.Expr) -> nodes.Expr:
        self.generic_visit(node)
        return self._through(node, _BUILT)

    visit_List = visit_Dict = _literal

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Expr:
        return self._literal(node) if node.ctx == "load" else node

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Expr:
        if isinstance(node.arg, nodes.Slice) and node.ctx == "load":  # compiled as s[a:b]
            return self._literal(node)
        self.generic_visit(node)
        return node


# -- hook filters, and every filter wrapped ---------------------------------------------------
@pass_context
def _loop(context: Context, items: object) -> BudgetedLoop:
    return BudgetedLoop(items, current_budget())


@pass_context
def _concat(context: Context, parts: list[object]) -> str:
    budget = current_budget()
    texts = [budget.as_text(part) for part in parts]
    budget.allow_string(sum(map(len, texts)))
    text = "".join(texts)
    budget.charge(text)
    return text


@pass_context
def _built(context: Context, value: object) -> object:
    return current_budget().charge(value)


@pass_context
def _finalize(context: Context, value: object) -> str:
    """What ``{{ value }}`` prints: sized before it is made, and counted."""
    budget = current_budget()
    text = budget.as_text(value)
    budget.charge(text)
    return text


_LEADING: Mapping[str | None, Callable[[Context], tuple[object, ...]]] = {
    "context": lambda context: (context,),
    "eval_context": lambda context: (context.eval_ctx,),
    "environment": lambda context: (context.environment,),
    None: lambda context: (),
}


def _budgeted(name: str, function: Callable[..., object]) -> Callable[..., object]:
    """``function`` checked before it runs and charged after. Takes the context, so the
    compiler never runs it on constants outside a render (and its budget)."""
    leading = _LEADING[getattr(getattr(function, "jinja_pass_arg", None), "name", None)]

    @pass_context
    def run(context: Context, value: object, *args: object, **kwargs: object) -> object:
        budget = current_budget()
        budget.tick()
        value = check_filter(budget, name, value, args, kwargs)
        return budget.charge(function(*leading(context), value, *args, **kwargs))

    return run


def _tojson(
    value: object,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """Hugging Face's ``tojson`` (non-ASCII kept as is), encoded piece by piece so that a
    structure sharing its parts is stopped at the string cap, not printed in full first."""
    budget = current_budget()
    encoder = json.JSONEncoder(
        ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )
    pieces: list[str] = []
    size = 0
    for piece in encoder.iterencode(value):
        size += len(piece)
        budget.allow_string(size)
        budget.tick()
        pieces.append(piece)
    return "".join(pieces)


# -- globals ----------------------------------------------------------------------------------
def _raise_exception(message: object = "") -> None:
    raise Rejected(current_budget().as_text(message))


def _strftime_now(fmt: object) -> str:
    text = current_budget().as_text(fmt)
    if len(text) > _MAX_DATE_FORMAT:  # each %-code may print a dozen characters
        raise TemplateBudgetError(f"strftime_now() formats are at most {_MAX_DATE_FORMAT} long")
    return datetime.datetime.now().strftime(text)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    if not isinstance(n, int) or not isinstance(max, int) or n * max > _MAX_LIPSUM_WORDS:
        raise TemplateBudgetError(f"lipsum() may make at most {_MAX_LIPSUM_WORDS:,} words")
    return generate_lorem_ipsum(n, html, min, max)
