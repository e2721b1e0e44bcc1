"""How big a value a template made is, counted as if its shared parts were copied out.

Lists, tuples and dicts a template builds may share parts: ``[x, x]`` doubled forty times is
forty small lists in memory, but prints, hashes and compares as 2**40 copies, in one C call
no deadline can interrupt. These measures walk each distinct part once (remembered by id), so
they cost what the value costs in memory, and stop as soon as the answer passes the limit.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, ItemsView, Iterable, KeysView, Sequence, ValuesView

__all__ = ["CONTAINERS", "Cyclic", "KnownSizes", "expanded", "repr_size", "text_of_leaves"]

_VIEWS: tuple[type[KeysView[object]], type[ValuesView[object]], type[ItemsView[object, object]]] = (
    type({}.keys()),
    type({}.values()),
    type({}.items()),
)  # ``d.items()`` prints d
CONTAINERS = (list, tuple, dict, set, frozenset, *_VIEWS)
LeavesSize = Callable[[Sequence[object], int], int]
_UNSEEN = object()


class Cyclic(Exception):
    """A value that contains itself (templates cannot build one; checked all the same)."""


def expanded(
    root: object,
    per_item: int,
    leaves_size: LeavesSize | None,
    limits: tuple[int, int],
    tick: Callable[[], None],
    known: Callable[[object], tuple[int, int] | None] = lambda _: None,
    measured: dict[int, tuple[int, int] | None] | None = None,
) -> tuple[int, int]:
    """(size, depth) of container ``root`` as expanded: each container costs 2, plus
    ``per_item`` per item, plus its containers' own sizes and ``leaves_size`` of its other
    items. Returns early, with a size or depth past ``limits`` (size, depth), once one is.
    ``known`` gives sizes measured before; ``measured`` receives every part's, by id."""
    limit, max_depth = limits
    measured = {} if measured is None else measured  # by id; None while its parts are
    stack = [root]
    while stack:
        node = stack[-1]
        state = measured.get(id(node), _UNSEEN)
        if state is not _UNSEEN and state is not None:
            stack.pop()  # a part met twice, measured the first time
            continue
        children = _children(node)
        size = 2 + per_item * len(children)
        if size > limit:
            return size, 1
        nested = _nested(children)
        if state is _UNSEEN:
            waiting = [c for c in nested if id(c) not in measured and known(c) is None]
            if waiting:
                measured[id(node)] = None
                stack.extend(waiting)
                continue
        stack.pop()
        depth = 1
        for child in nested:
            sizes = known(child) or measured[id(child)]
            if sizes is None:  # still being measured: it holds this node
                raise Cyclic
            size, depth = size + sizes[0], max(depth, sizes[1] + 1)
        if leaves_size is not None and len(nested) < len(children):
            leaves = [c for c in children if not isinstance(c, CONTAINERS)] if nested else children
            size += leaves_size(leaves, limit)
        if size > limit or depth > max_depth:
            return size, depth
        measured[id(node)] = (size, depth)
        tick()
    sizes = known(root) or measured[id(root)]
    if sizes is None:  # never: the loop ends once the root is measured
        raise Cyclic
    return sizes


class KnownSizes:
    """Sizes (items, depth) measured before, so a template that grows a list one item at a
    time (``ns.l + [x]``) is not walked from the start on every step: the render's inputs
    (alive for the whole render, so their ids stay theirs), and the last few containers the
    template built (kept alive here for the same reason)."""

    def __init__(self, recent: int = 8):
        self._inputs: dict[int, tuple[int, int] | None] = {}
        self._recent: OrderedDict[int, tuple[object, int, int]] = OrderedDict()
        self._capacity = recent

    def add_inputs(self, value: object, tick: Callable[[], None]) -> None:
        if isinstance(value, CONTAINERS):
            expanded(value, 1, None, (1 << 62, 1 << 62), tick, measured=self._inputs)

    def remember(self, value: object, sizes: tuple[int, int]) -> None:
        self._recent[id(value)] = (value, *sizes)
        while len(self._recent) > self._capacity:
            self._recent.popitem(last=False)

    def get(self, value: object) -> tuple[int, int] | None:
        sizes = self._inputs.get(id(value))
        if sizes is not None:
            return sizes
        recent = self._recent.get(id(value))
        return (recent[1], recent[2]) if recent is not None and recent[0] is value else None


def text_of_leaves(leaves: Sequence[object], limit: int) -> int:
    """How long the reprs of ``leaves`` (no containers among them) are, at most."""
    strings = [leaf for leaf in leaves if isinstance(leaf, str)]
    size = sum(map(len, strings)) + 2 * len(strings)
    if size > limit:  # before looking at characters: there may be a great many
        return size
    size += 9 * sum(len(s) for s in strings if not (s.isascii() and s.isprintable()))
    if len(strings) < len(leaves):
        size += sum(repr_size(leaf) for leaf in leaves if not isinstance(leaf, str))
    return size


def repr_size(value: object) -> int:
    """At most how long ``repr(value)`` is, for anything but a container."""
    if isinstance(value, str):  # repr may write a character as ``\\U0001f600``
        return text_of_leaves([value], 1 << 62)
    if isinstance(value, bytes):
        return 4 * len(value) + 3
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    return 32  # floats, None, and the sandbox's own objects (their reprs are short)


def _children(node: object) -> Sequence[object]:
    """The objects ``node`` holds (never new ones: they are remembered by id)."""
    if isinstance(node, list | tuple):
        return node
    if isinstance(node, dict):
        return [*node.keys(), *node.values()]
    if isinstance(node, _VIEWS[2]):  # its (key, value) pairs are made afresh on each pass
        return [part for pair in node for part in pair]
    if not isinstance(node, Iterable):
        raise TypeError(f"{type(node).__name__!r} object is not iterable")
    return list(node)


def _nested(children: Sequence[object]) -> list[object]:
    """The containers among ``children``; many are checked by their types first (quicker)."""
    if len(children) > 16 and not any(
        issubclass(kind, CONTAINERS) for kind in set(map(type, children))
    ):
        return []
    return [child for child in children if isinstance(child, CONTAINERS)]
