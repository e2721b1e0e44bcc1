"""Model replies as HTML for ``QTextBrowser``: Markdown, highlighted code, a copy link per block.

markdown-it-py parses (with raw HTML off: a reply must never inject markup), Pygments colours
code with inline styles (the subset of HTML that ``QTextDocument`` understands), and each code
block gets a ``copy:<key>:<n>`` link whose target text is returned alongside the HTML.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["COPY_SCHEME", "MarkdownRenderer", "Rendered", "copy_target"]

COPY_SCHEME = "copy"
_SAFE_LINKS = ("http://", "https://", "mailto:")


@dataclass(frozen=True, slots=True)
class Rendered:
    html: str
    code_blocks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Palette:
    style: str
    code_background: str
    header: str
    inline_background: str


_LIGHT = _Palette("friendly", "#f3f4f6", "#6b7280", "#eceef1")
_DARK = _Palette("monokai", "#1e1f22", "#9ca3af", "#2b2d31")


def copy_target(href: str) -> tuple[str, int] | None:
    """``copy:<key>:<n>`` -> (key, n); None for any other link."""
    scheme, _, rest = href.partition(":")
    key, _, number = rest.rpartition(":")
    if scheme != COPY_SCHEME or not key or not number.isdigit():
        return None
    return key, int(number)


class MarkdownRenderer:
    def __init__(self, dark: bool = False):
        self._palette = _DARK if dark else _LIGHT
        self._formatter = HtmlFormatter(nowrap=True, noclasses=True, style=self._palette.style)
        self._md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
            ["table", "strikethrough"]
        )
        # Only web links: a reply must not forge the transcript's own copy:/action: links.
        self._md.validateLink = lambda url: url.lower().startswith(_SAFE_LINKS)
        # markdown-it binds rules to its renderer, so pass plain functions that call back here.
        self._md.add_render_rule(
            "fence", lambda _r, tokens, i, _o, env: self._fence(tokens[i], env)
        )
        self._md.add_render_rule("code_block", lambda _r, t, i, _o, env: self._fence(t[i], env))
        self._md.add_render_rule("code_inline", lambda _r, t, i, _o, _e: self._code_inline(t[i]))

    def render(self, text: str, key: str = "m") -> Rendered:
        env: dict = {"key": key, "blocks": []}
        body = self._md.render(text, env)
        return Rendered(body, tuple(env["blocks"]))

    def _highlight(self, code: str, language: str) -> str:
        try:
            lexer = get_lexer_by_name(language) if language else TextLexer()
        except ClassNotFound:
            lexer = TextLexer()
        return highlight(code, lexer, self._formatter).rstrip("\n")

    def _fence(self, token, env: dict) -> str:
        language = token.info.strip().split(" ")[0] if token.info else ""
        env["blocks"].append(token.content)
        href = f"{COPY_SCHEME}:{env['key']}:{len(env['blocks']) - 1}"
        p = self._palette
        return (
            f'<table width="100%" cellspacing="0" cellpadding="8" bgcolor="{p.code_background}"'
            ' style="margin-top:6px; margin-bottom:6px;">'
            f'<tr><td><span style="color:{p.header}; font-size:small;">'
            f"{html.escape(language or 'text')}</span>&nbsp;&nbsp;"
            f'<a href="{href}" style="font-size:small;">Copy</a></td></tr>'
            f'<tr><td><pre style="margin:0;">{self._highlight(token.content, language)}</pre>'
            "</td></tr></table>\n"
        )

    def _code_inline(self, token) -> str:
        content = html.escape(token.content)
        return f'<code style="background-color:{self._palette.inline_background};">{content}</code>'
