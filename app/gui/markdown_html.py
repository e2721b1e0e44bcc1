"""Model replies as HTML for ``QTextBrowser``: Markdown, highlighted code, a copy link per block.

markdown-it-py parses (with raw HTML off: a reply must never inject markup), Pygments colours
code with inline styles (the subset of HTML that ``QTextDocument`` understands), and each code
block gets a header naming its language and a ``copy:<key>:<n>`` link (an icon and "Copy")
whose target text is returned alongside the HTML. Colours are the design tokens'.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from localllm.app.gui.design.tokens import palette

__all__ = ["COPY_SCHEME", "ICON_SIZE", "MarkdownRenderer", "Rendered", "copy_target"]

COPY_SCHEME = "copy"
_SAFE_LINKS = ("http://", "https://", "mailto:")


@dataclass(frozen=True, slots=True)
class Rendered:
    html: str
    code_blocks: tuple[str, ...]


ICON_SIZE = 14  # the copy icon, in the code header ("icon:copy")


def copy_target(href: str) -> tuple[str, int] | None:
    """``copy:<key>:<n>`` -> (key, n); None for any other link."""
    scheme, _, rest = href.partition(":")
    key, _, number = rest.rpartition(":")
    if scheme != COPY_SCHEME or not key or not number.isdigit():
        return None
    return key, int(number)


class _WebLinksOnly(MarkdownIt):
    """Only web links: a reply must not forge the transcript's own copy:/action: links."""

    def validateLink(self, url: str) -> bool:
        return url.lower().startswith(_SAFE_LINKS)


class MarkdownRenderer:
    def __init__(self, dark: bool = False):
        self._palette = palette(dark)
        self._formatter = HtmlFormatter(nowrap=True, noclasses=True, style=self._palette.pygments)
        self._md = _WebLinksOnly("commonmark", {"html": False, "breaks": True}).enable(
            ["table", "strikethrough"]
        )
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
        copy = (
            f'<a href="{href}" style="color:{p.muted}; text-decoration:none;">'
            f'<img src="icon:copy" width="{ICON_SIZE}" height="{ICON_SIZE}"> Copy</a>'
        )
        return (  # a code block: the transcript paints it round, its header in a band
            f'<table width="100%" cellspacing="0" cellpadding="8" bgcolor="{p.code}"'
            ' style="margin-top:8px; margin-bottom:8px;">'
            '<tr><td style="font-size:small;">'
            f'<span style="color:{p.muted};">{html.escape(language or "text")}</span></td>'
            f'<td align="right" style="font-size:small;">{copy}</td></tr>'
            f'<tr><td colspan="2"><pre style="margin:0;">'
            f"{self._highlight(token.content, language)}</pre></td></tr></table>\n"
        )

    def _code_inline(self, token) -> str:
        content = html.escape(token.content)
        return f'<code style="background-color:{self._palette.inline_code};">{content}</code>'
