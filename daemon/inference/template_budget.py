"""What one render of a chat template may spend: time, loop iterations and memory.

Templates are untrusted code (a model file's ``tokenizer.chat_template``, a Modelfile
``TEMPLATE``, a request's ``template``). They render in a worker thread, and a thread cannot be
killed, so a runaway render has to stop itself: every hook the sandbox has into a render (each
loop iteration, call, attribute lookup, operator, filter and output) goes through the render's
``Budget``, which raises ``TemplateBudgetError`` once the render is past its deadline or its
loop allowance, or builds a string, list or nesting bigger than the caps below.

Lists, tuples and dicts a template builds are counted as they would expand, and printing one
is sized before it is done (``template_sizes``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sized
from contextvars import ContextVar
from types import GeneratorType
from typing import TypeGuard

from localllm.daemon.errors import TemplateBudgetError
from localllm.daemon.inference.template_sizes import (
    CONTAINERS,
    Cyclic,
    KnownSizes,
    expanded,
    repr_size,
    text_of_leaves,
)

__all__ = [
    "MAX_BUILT_CHARS",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_LOOP_ITERATIONS",
    "MAX_SOURCE_CHARS",
    "MAX_STRING_CHARS",
    "RENDER_SECONDS",
    "Budget",
    "BudgetedLoop",
    "current_budget",
]

MAX_SOURCE_CHARS = 256 << 10  # real chat templates are under 20 KiB; parsing is ~6 s per MiB
MAX_LOOP_ITERATIONS = 1_000_000  # per render, every loop and filter-made sequence together
MAX_STRING_CHARS = 8 << 20  # any one string, the prompt included: far past any context
MAX_ITEMS = 1 << 20  # items in a list, tuple or dict a template builds, counted as expanded
MAX_DEPTH = 100  # nesting of what a template builds (deeper hashes crash CPython)
MAX_BUILT_CHARS = 32 << 20  # characters (and items) built in all, so memory stays bounded
RENDER_SECONDS = 2.0  # a render takes milliseconds; the deadline is for runaway ones

_current: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


def current_budget() -> Budget:
    """The budget of the render running in this thread; template code outside a render (the
    compiler folding constants) is refused, so it runs later, under a budget."""
    budget = _current.get()
    if budget is None:
        raise TemplateBudgetError("template code ran outside a render")
    return budget


class Budget:
    """One render's allowance; ``active()`` makes it the one the sandbox's hooks charge."""

    __slots__ = ("built", "deadline", "iterations", "known")

    def __init__(self, seconds: float = RENDER_SECONDS):
        self.deadline = time.monotonic() + seconds
        self.iterations = 0
        self.built = 0
        self.known = KnownSizes()

    def add_inputs(self, *values: object) -> None:
        """The render's inputs (messages, tools): measured once, up front."""
        for value in values:
            self.known.add_inputs(value, self.tick)

    @contextlib.contextmanager
    def active(self) -> Iterator[Budget]:
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def tick(self) -> None:
        """Called from every hook, so a render past its deadline stops within moments."""
        if time.monotonic() > self.deadline:
            raise TemplateBudgetError(f"it ran longer than {RENDER_SECONDS:g} s")

    def iterate(self) -> None:
        self.iterations += 1
        if self.iterations > MAX_LOOP_ITERATIONS:
            raise TemplateBudgetError(f"it looped more than {MAX_LOOP_ITERATIONS:,} times")
        self.tick()

    def allow_string(self, length: int) -> None:
        """Before building a string of ``length`` characters."""
        if length > MAX_STRING_CHARS:
            raise TemplateBudgetError(
                f"it built a string of {length:,} characters (at most {MAX_STRING_CHARS:,})"
            )

    def charge(self, value: object) -> object:
        """Account for a value a template operation just made; returns it, iterators wrapped
        so that each item they yield counts as a loop iteration."""
        if isinstance(value, str | bytes):
            self.allow_string(len(value))
            self._add(len(value))
        elif isinstance(value, CONTAINERS):
            self._add(len(value))
            self.check_structure(value)
        elif _is_lazy_sequence(value):
            return BudgetedLoop(value, self)
        return value

    def _add(self, amount: int) -> None:
        self.built += amount
        if self.built > MAX_BUILT_CHARS:
            raise TemplateBudgetError(
                f"it built more than {MAX_BUILT_CHARS:,} characters and items in all"
            )

    def check_structure(self, value: object) -> None:
        """Items (counted as expanded: a shared part once per reference) and nesting."""
        if self.known.get(value) is not None:
            return
        try:
            sizes = expanded(value, 1, None, (MAX_ITEMS, MAX_DEPTH), self.tick, self.known.get)
        except Cyclic:
            raise TemplateBudgetError("it built a list that contains itself") from None
        self._allow_structure(value, sizes)

    def charge_sum(self, total: object, left: object, right: object) -> object:
        """``left + right``: its size from theirs where both are known, so a list grown one
        item at a time (``ns.l + [x]``) is not walked again on every step."""
        left_sizes, right_sizes = self.known.get(left), self.known.get(right)
        if not isinstance(total, list | tuple) or left_sizes is None or right_sizes is None:
            return self.charge(total)
        (left_items, left_depth), (right_items, right_depth) = left_sizes, right_sizes
        self._add(len(total))
        self._allow_structure(total, (left_items + right_items - 2, max(left_depth, right_depth)))
        return total

    def _allow_structure(self, value: object, sizes: tuple[int, int]) -> None:
        items, depth = sizes
        if items > MAX_ITEMS:
            raise TemplateBudgetError(
                f"it built a list or dict of more than {MAX_ITEMS:,} items, counted as expanded"
            )
        if depth > MAX_DEPTH:
            raise TemplateBudgetError(f"it nested lists or dicts deeper than {MAX_DEPTH}")
        self.known.remember(value, sizes)

    def text_size(self, value: object, limit: int = MAX_STRING_CHARS) -> int:
        """About how long ``str(value)`` is, found without building it; refused past
        ``limit``. Generous for odd characters (``repr`` may write ``\\U0001f600``)."""
        if isinstance(value, str):
            size = len(value)
        elif isinstance(value, CONTAINERS):
            size = expanded(value, 2, text_of_leaves, (limit, 1 << 30), self.tick)[0]
        else:
            size = repr_size(value)
        if size > limit:
            raise TemplateBudgetError(
                f"it printed a value of about {size:,} characters (at most {limit:,})"
            )
        return size

    def as_text(self, value: object) -> str:
        """``str(value)``, sized before it is made (what ``{{ value }}`` and ``~`` print)."""
        if isinstance(value, str):
            return value
        self.text_size(value)
        return str(value)


class BudgetedLoop:
    """An iterable whose every item is one loop iteration of the render's budget. Keeps
    ``len`` where the items have one, so ``loop.length`` need not read ahead."""

    __slots__ = ("_budget", "_items")

    def __init__(self, items: object, budget: Budget):
        self._items = items  # what a template loops over: not always iterable
        self._budget = budget

    def __iter__(self) -> Iterator[object]:
        iterate = self._budget.iterate
        if not isinstance(self._items, Iterable):
            raise TypeError(f"{type(self._items).__name__!r} object is not iterable")
        for item in self._items:
            iterate()
            yield item

    def __len__(self) -> int:
        if not isinstance(self._items, Sized):  # LoopContext copes
            raise TypeError(f"object of type {type(self._items).__name__!r} has no len()")
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)  # as the items would be (``if value`` in filters)


def _is_lazy_sequence(value: object) -> TypeGuard[Iterator[object]]:
    """A generator or a built-in iterator (what filters such as ``map`` return); not the
    sandbox's own iterators (``cycler``, ``loop``), which are used by their methods."""
    kind = type(value)
    return kind is GeneratorType or (kind.__module__ == "builtins" and hasattr(kind, "__next__"))
