"""Size checks, before they run, for the template operations that can multiply their input.

``'x'.center(10**9)``, ``'%999999999s' % x``, ``'x' * 10**9`` or ``text|indent(10**9)`` would
allocate gigabytes in one C call, which no deadline can interrupt; so each is sized from its
arguments first and refused (``TemplateBudgetError``) when the result would pass the budget's
caps. Everything else a template makes is charged after the fact (``Budget.charge``).
"""

from __future__ import annotations

import re
import string
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TypeGuard

from localllm.daemon.errors import TemplateBudgetError
from localllm.daemon.inference.template_budget import MAX_ITEMS, MAX_STRING_CHARS, Budget

__all__ = ["check_binop", "check_filter", "check_method", "format_size"]

MAX_INT_BITS = 1 << 16  # integers a template computes (``**`` and ``*`` grow them)
_PERCENT_SPEC = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?"
    r"[hlL]?(?P<type>.?)",
    re.DOTALL,
)
_SPEC_NUMBERS = re.compile(r"\d+")
_FLOAT_DIGITS = 320  # the most digits a float prints before its precision


def check_binop(budget: Budget, operator: str, left: object, right: object) -> None:
    if operator == "**" and _is_int(left) and _is_int(right):
        if abs(left).bit_length() * abs(right) > MAX_INT_BITS:
            raise TemplateBudgetError(f"{left} ** {right} is too large")
    elif operator == "*":
        _check_product(budget, left, right)
    elif operator == "+" and isinstance(left, str | bytes) and isinstance(right, str | bytes):
        budget.allow_string(len(left) + len(right))
    elif operator == "+" and isinstance(left, list | tuple) and isinstance(right, list | tuple):
        _allow_items(len(left) + len(right))
    elif operator == "%" and isinstance(left, str):
        budget.allow_string(percent_size(budget, left, right))


def _check_product(budget: Budget, left: object, right: object) -> None:
    if _is_int(left) and _is_int(right):
        if abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS:
            raise TemplateBudgetError("an integer product is too large")
        return
    sequence, count = (left, right) if _is_int(right) else (right, left)
    if not _is_int(count):
        return
    if isinstance(sequence, str | bytes):
        budget.allow_string(len(sequence) * max(count, 0))
    elif isinstance(sequence, list | tuple):
        _allow_items(len(sequence) * max(count, 0))


def percent_size(budget: Budget, fmt: str, values: object) -> int:
    """An upper bound on the length of ``fmt % values`` (or a size past the cap, early)."""
    mapping = values if isinstance(values, Mapping) else None
    queue = deque(values if isinstance(values, tuple) else [values])
    size = len(fmt)
    for index, spec in enumerate(_PERCENT_SPEC.finditer(fmt)):
        if index & 0xFFF == 0:  # there may be millions of them
            budget.tick()
        if spec["type"] == "%":
            continue
        size += _star_or_number(spec["width"], queue) + _star_or_number(spec["precision"], queue)
        if mapping is not None and spec["key"] is not None:
            value = mapping.get(spec["key"])
        else:
            value = queue.popleft() if queue else None
        size += _value_size(budget, value, spec["type"] in ("r", "a"))
        if size > MAX_STRING_CHARS:
            break
    return size


def format_size(
    budget: Budget, fmt: str, args: tuple[object, ...], kwargs: Mapping[str, object]
) -> int:
    """An upper bound on the length of ``fmt.format(*args, **kwargs)`` (or, early, a size
    past the cap)."""
    size, automatic = 0, 0
    for index, (literal, field, spec, conversion) in enumerate(string.Formatter().parse(fmt)):
        if index & 0xFFF == 0:
            budget.tick()
        size += len(literal)
        if field is None:
            continue
        if "{" in (spec or ""):
            raise TemplateBudgetError("format widths must be plain numbers")
        if field == "":
            value, automatic = (args[automatic] if automatic < len(args) else None), automatic + 1
        elif field.isdigit():
            value = args[int(field)] if int(field) < len(args) else None
        elif field.isidentifier():
            value = kwargs.get(field)
        else:  # an attribute or item of an argument: as long as the longest argument
            value = max((*args, *kwargs.values()), key=budget.text_size, default=None)
        numbers = sum(int(n) for n in _SPEC_NUMBERS.findall(spec or ""))
        size += numbers + _value_size(budget, value, conversion in ("r", "a"))
        if size > MAX_STRING_CHARS:
            break
    return size


def _star_or_number(text: str | None, queue: deque[object]) -> int:
    if text is None:
        return 0
    if text != "*":
        return int(text)
    value = queue.popleft() if queue else 0
    return abs(value) if _is_int(value) else 0


def _value_size(budget: Budget, value: object, as_repr: bool) -> int:
    size = budget.text_size(value)
    if isinstance(value, float):
        size = _FLOAT_DIGITS  # '%f' % 1e308 writes every digit
    return 10 * size + 2 if as_repr else size


# -- methods of str and bytes ---------------------------------------------------------------
def check_method(
    budget: Budget, method: object, args: tuple[object, ...], kwargs: Mapping[str, object]
) -> tuple[object, ...]:
    """Check a call of a str or bytes method that can grow its string; returns the arguments
    to call it with (``join`` reads its iterable once, here)."""
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, str | bytes):
        return args
    if name in ("center", "ljust", "rjust", "zfill"):
        width = _argument(args, kwargs, 0, "width", 0)
        budget.allow_string(max(len(owner), width if _is_int(width) else 0))
    elif name == "expandtabs":
        tabs = _argument(args, kwargs, 0, "tabsize", 8)
        tab_count = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
        budget.allow_string(len(owner) + tab_count * (tabs if _is_int(tabs) else 0))
    elif name == "replace" and len(args) >= 2:
        count = _argument(args, kwargs, 2, "count", -1)
        budget.allow_string(_replaced_size(owner, args[0], args[1], count))
    elif name == "join" and args:
        items = _items(args[0])
        budget.allow_string(_joined_size(budget, owner, items))
        return (items, *args[1:])
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        budget.allow_string(len(owner) * max(longest, 1))
    return args


def _argument(
    args: tuple[object, ...], kwargs: Mapping[str, object], index: int, name: str, default: object
) -> object:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _replaced_size(text: str | bytes, old: object, new: object, count: object) -> int:
    if not isinstance(old, str | bytes) or not isinstance(new, str | bytes):
        return len(text)  # the call itself refuses them
    if type(old) is not type(text) or type(new) is not type(text):
        return len(text)  # the call itself refuses mixed types
    found = _occurrences(text, old) if old else len(text) + 1
    if _is_int(count) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def _occurrences(text: str | bytes, part: str | bytes) -> int:
    """``text.count(part)`` for two strings or two byte strings (the caller checked)."""
    if isinstance(text, str):
        return text.count(part) if isinstance(part, str) else 0
    return text.count(part) if isinstance(part, bytes) else 0


def _joined_size(budget: Budget, separator: str | bytes, items: list[object]) -> int:
    parts = sum(budget.text_size(item) for item in items)
    return parts + len(separator) * max(len(items) - 1, 0)


# -- filters --------------------------------------------------------------------------------
def check_filter(
    budget: Budget, name: str, value: object, args: tuple[object, ...], kwargs: Mapping[str, object]
) -> object:
    """Check a filter's arguments before it runs; returns the value to run it on."""
    if name in _STRINGIFYING:  # these call str() on what they get, a list included
        for argument in (value, *args, *kwargs.values()):
            budget.text_size(argument)
    check = _FILTER_CHECKS.get(name)
    return check(budget, value, *args, **kwargs) if check else value


def _center(budget: Budget, value: object, width: object = 80) -> object:
    budget.allow_string(max(budget.text_size(value), width if _is_int(width) else 0))
    return value


def _indent(budget: Budget, value: object, width: object = 4, *_: object, **__: object) -> object:
    prefix = len(width) if isinstance(width, str) else width if _is_int(width) else 0
    budget.allow_string(prefix)
    lines = str(value).count("\n") + 2
    budget.allow_string(budget.text_size(value) + lines * prefix)
    return value


def _format(budget: Budget, value: object, *args: object, **kwargs: object) -> object:
    budget.allow_string(percent_size(budget, str(value), kwargs or args))
    return value


def _replace(
    budget: Budget, value: object, old: object = "", new: object = "", count: object = None
) -> object:
    size = _replaced_size(str(value), str(old), str(new), -1 if count is None else count)
    budget.allow_string(size)
    return value


def _join(budget: Budget, value: object, d: object = "", attribute: object = None) -> object:
    if attribute is not None:
        return value  # items are attributes of each one: the result is checked after
    items = _items(value)
    budget.allow_string(_joined_size(budget, str(d), items))
    return items


def _wordwrap(
    budget: Budget,
    value: object,
    width: object = 79,
    long: object = True,
    wrapstring: object = None,
    *_: object,
    **__: object,
) -> object:
    size = budget.text_size(value)  # at worst one line per character, each joined
    budget.allow_string(size + (size + 1) * len(str(wrapstring if wrapstring else "\n")))
    return value


def _urlize(budget: Budget, value: object, *args: object, **kwargs: object) -> object:
    extra = sum(len(str(v)) for v in (*args, *kwargs.values()) if isinstance(v, str))
    size = budget.text_size(value)
    budget.allow_string(3 * size + (size // 4 + 1) * (extra + 64))
    return value


def _batch(
    budget: Budget, value: object, linecount: object = 1, fill_with: object = None
) -> object:
    if fill_with is not None and _is_int(linecount):
        _allow_items(linecount)
    return value


def _pprint(budget: Budget, value: object) -> object:
    budget.text_size(value, limit=MAX_STRING_CHARS // 128)  # indentation multiplies it
    return value


def _allow_items(count: int) -> None:
    if count > MAX_ITEMS:
        raise TemplateBudgetError(f"it built a list of {count:,} items (at most {MAX_ITEMS:,})")


def _items(value: object) -> list[object]:
    """``list(value)``, read once; a TypeError for a non-iterable, as the call would raise."""
    if not isinstance(value, Iterable):
        raise TypeError(f"{type(value).__name__!r} object is not iterable")
    return list(value)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


_FILTER_CHECKS: Mapping[str, Callable[..., object]] = {
    "center": _center,
    "indent": _indent,
    "format": _format,
    "replace": _replace,
    "join": _join,
    "wordwrap": _wordwrap,
    "urlize": _urlize,
    "batch": _batch,
    "pprint": _pprint,
}
_STRINGIFYING = frozenset(
    {"capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower",
     "pprint", "replace", "string", "striptags", "title", "trim", "truncate", "upper",
     "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"}
)  # fmt: skip
