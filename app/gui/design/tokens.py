"""The design tokens, without Qt: colours for light and dark, spacing, radii, the type scale,
the width of the conversation's reading column.

Colours carry meaning, the same on every page: green for what fits or worked, amber for what is
tight or worth knowing, red for errors only, the accent for what the user can act on or chose.
The stylesheet, the transcript's HTML and the badges all read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DARK", "LIGHT", "RADIUS", "READING_WIDTH", "SPACE", "TYPE", "Palette", "palette"]


@dataclass(frozen=True, slots=True)
class Palette:
    dark: bool
    accent: str  # buttons that do the main thing, the chosen item, links
    accent_hover: str
    accent_pressed: str
    on_accent: str  # text on the accent
    accent_soft: str  # the background of a chosen row or item
    link: str
    window: str  # behind everything: the navigation, the page margins
    surface: str  # cards, lists, the conversation
    surface_alt: str  # a quieter surface: table headers, code headers, inputs' rest state
    hover: str
    pressed: str
    border: str
    border_strong: str
    text: str
    muted: str  # secondary text
    faint: str  # placeholders, disabled text
    success: str
    success_soft: str
    warning: str
    warning_soft: str
    danger: str
    danger_soft: str
    info: str
    info_soft: str
    bubble: str  # the user's messages
    code: str  # code blocks
    code_header: str
    inline_code: str
    pygments: str  # the Pygments style that colours code on ``code``

    def tone(self, name: str) -> tuple[str, str]:
        """A tone's (text, background): "success", "warning", "danger", "info", "accent",
        "neutral"."""
        if name == "neutral":
            return self.muted, self.surface_alt
        if name == "accent":  # the link colour reads better on the soft accent, in the dark too
            return self.link, self.accent_soft
        return getattr(self, name), getattr(self, f"{name}_soft")


LIGHT = Palette(
    dark=False,
    accent="#4f46e5",
    accent_hover="#4338ca",
    accent_pressed="#3730a3",
    on_accent="#ffffff",
    accent_soft="#eef0ff",
    link="#4338ca",
    window="#f4f4f6",
    surface="#ffffff",
    surface_alt="#f6f6f8",
    hover="#efeff3",
    pressed="#e4e4ea",
    border="#e3e3e8",
    border_strong="#c9c9d1",
    text="#18181b",
    muted="#5f5f6b",
    faint="#9e9eaa",
    success="#15803d",
    success_soft="#e3f6e9",
    warning="#a35c06",
    warning_soft="#fdf2dc",
    danger="#b42318",
    danger_soft="#fdecea",
    info="#1d4ed8",
    info_soft="#e6eefe",
    bubble="#eef0ff",
    code="#f7f7f9",
    code_header="#ededf1",
    inline_code="#efeff3",
    pygments="friendly",
)

DARK = Palette(
    dark=True,
    accent="#6366f1",
    accent_hover="#7c7ff5",
    accent_pressed="#4f46e5",
    on_accent="#ffffff",
    accent_soft="#2b2c4d",
    link="#a5b4fc",
    window="#131316",
    surface="#1b1b1f",
    surface_alt="#232328",
    hover="#2a2a31",
    pressed="#34343c",
    border="#2f2f37",
    border_strong="#45454f",
    text="#ececf0",
    muted="#a6a6b2",
    faint="#6f6f7b",
    success="#4ade80",
    success_soft="#16301f",
    warning="#fbbf24",
    warning_soft="#3a2b0c",
    danger="#f87171",
    danger_soft="#3d1717",
    info="#93c5fd",
    info_soft="#172741",
    bubble="#2b2c45",
    code="#141417",
    code_header="#202026",
    inline_code="#2a2a31",
    pygments="monokai",
)


def palette(dark: bool) -> Palette:
    return DARK if dark else LIGHT


@dataclass(frozen=True, slots=True)
class _Space:
    xs: int = 4
    sm: int = 8
    md: int = 12
    lg: int = 16
    xl: int = 24
    xxl: int = 32


@dataclass(frozen=True, slots=True)
class _Radius:
    sm: int = 6
    md: int = 8
    lg: int = 12


@dataclass(frozen=True, slots=True)
class _Type:
    """Point sizes; the body is the application font's."""

    caption: float = 8.5
    small: float = 9.0
    body: float = 10.0
    section: float = 11.0
    title: float = 16.0


SPACE = _Space()
RADIUS = _Radius()
TYPE = _Type()

READING_WIDTH = 820  # pixels: the widest the conversation's text gets (wider views centre it)
