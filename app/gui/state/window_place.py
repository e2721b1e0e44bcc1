"""Where the window was, kept between runs: its size, its place and whether it was maximised.

Qt's own ``saveGeometry``/``restoreGeometry`` restores nothing once the screen's width differs
by more than a quarter from the one it was saved on (its guard against a change of display
scaling): a window quit at 1024x700 on a 1366 px screen came back at its size hint on a
1920 px one. This keeps the size the user gave the window (made to fit the screen it comes back
on) and its place while a screen still shows it (else the window manager places it). Qt-free:
one line of text in ``QSettings``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = ["Area", "WindowPlace"]

_MAXIMIZED, _NORMAL = "maximized", "normal"


@dataclass(frozen=True, slots=True)
class Area:
    """A rectangle in screen coordinates."""

    x: int
    y: int
    width: int
    height: int

    def overlap(self, other: Area) -> int:
        """How many pixels the two share."""
        wide = min(self.x + self.width, other.x + other.width) - max(self.x, other.x)
        high = min(self.y + self.height, other.y + other.height) - max(self.y, other.y)
        return max(wide, 0) * max(high, 0)


@dataclass(frozen=True, slots=True)
class WindowPlace:
    """``area``: the window's size and the top-left corner of its frame, as it is when not
    maximised."""

    area: Area
    maximized: bool = False

    def text(self) -> str:
        a = self.area
        return f"{a.x} {a.y} {a.width} {a.height} {_MAXIMIZED if self.maximized else _NORMAL}"

    @classmethod
    def parse(cls, value: object) -> WindowPlace | None:
        """The place ``text`` wrote, or None for anything else (nothing saved yet)."""
        parts = str(value or "").split()
        if len(parts) != 5 or parts[4] not in (_MAXIMIZED, _NORMAL):
            return None
        try:
            x, y, width, height = (int(p) for p in parts[:4])
        except ValueError:
            return None
        if width <= 0 or height <= 0:
            return None
        return cls(Area(x, y, width, height), parts[4] == _MAXIMIZED)

    def fitted(self, screens: Sequence[Area]) -> tuple[WindowPlace, bool]:
        """This place on ``screens`` (their areas free of panels, the primary first): no larger
        than the screen showing most of it (the primary when none shows any), moved inside it;
        and whether its position holds (False: a screen that is gone had it)."""
        if not screens:
            return self, False
        home = max(screens, key=self.area.overlap)
        shown = self.area.overlap(home) > 0
        if not shown:
            home = screens[0]
        width, height = min(self.area.width, home.width), min(self.area.height, home.height)
        x = min(max(self.area.x, home.x), home.x + home.width - width)
        y = min(max(self.area.y, home.y), home.y + home.height - height)
        return replace(self, area=Area(x, y, width, height)), shown
