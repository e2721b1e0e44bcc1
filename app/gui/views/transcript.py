"""The conversation as one scrolling document: Markdown replies, code with copy links,
per-message actions, stats under each reply, errors in place with what to do next.

Redrawing on every streamed token would be wasteful, so changes are coalesced (about 25 frames
a second) and each finished message's HTML is cached; the view stays pinned to the bottom
while a reply streams unless the user has scrolled up to read.
"""

from __future__ import annotations

import base64
import contextlib
import html

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QImage
from PySide6.QtWidgets import QTextBrowser

from app.gui.markdown_html import MarkdownRenderer, copy_target
from app.gui.state.chat.records import Message

__all__ = ["Transcript"]

_FRAME_MS = 40
_THUMBNAIL = 160  # pixels, the longest side of a picture shown in a message
_BUBBLES = {False: "#eef0ff", True: "#2a2d45"}  # the user's messages
_EMPTY = (
    "<div style='color:gray; margin-top:40px;' align='center'><h3>Ask anything</h3>"
    "<p>Enter sends · Shift+Enter adds a line · Esc stops a reply</p></div>"
)


class Transcript(QTextBrowser):
    edit_requested = Signal(str, str)  # message id, its text
    regenerate_requested = Signal()
    copied = Signal(str)  # what was copied, for a status message

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setReadOnly(True)
        self.anchorClicked.connect(self._clicked)
        self._renderer = MarkdownRenderer()
        self._bubble = _BUBBLES[False]
        self.document().setDocumentMargin(12)
        self._cache: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        self._thumbnails: dict[str, QImage] = {}  # by "message id/index"
        self._messages: tuple[Message, ...] = ()
        self._assistant = "Assistant"
        self._streaming = False
        self._timer = QTimer(self, singleShot=True, interval=_FRAME_MS)
        self._timer.timeout.connect(self._render)
        self._render()

    def set_dark(self, dark: bool) -> None:
        self._renderer = MarkdownRenderer(dark)
        self._bubble = _BUBBLES[dark]
        self._cache.clear()
        self._render()

    def show_messages(self, messages: tuple[Message, ...], assistant: str, streaming: bool):
        """Draw soon (coalesced while streaming), or now when the reply is complete."""
        self._messages, self._assistant, self._streaming = messages, assistant, streaming
        if streaming:
            if not self._timer.isActive():
                self._timer.start()
        else:
            self._timer.stop()
            self._render()

    def message_text(self, message_id: str) -> str:
        return next((m.content for m in self._messages if m.id == message_id), "")

    # drawing

    def _render(self) -> None:
        bar = self.verticalScrollBar()
        pinned = bar.value() >= bar.maximum() - 4
        kept = bar.value()
        last_reply = next((m.id for m in reversed(self._messages) if m.role == "assistant"), "")
        blocks = [self._block(m, m.id == last_reply) for m in self._messages]
        self.setHtml("".join(blocks) or _EMPTY)
        bar.setValue(bar.maximum() if pinned else kept)

    def _block(self, m: Message, last_reply: bool) -> str:
        streaming = self._streaming and last_reply and m is self._messages[-1]
        who = "You" if m.role == "user" else html.escape(self._assistant)
        head = f"<p style='margin-bottom:2px;'><b>{who}</b></p>"
        if m.role == "user":
            text = html.escape(m.content).replace("\n", "<br>")
            pictures = "".join(f"<img src='picture:{m.id}/{i}'> " for i in range(len(m.images)))
            body = (
                f"<table width='100%' cellpadding='8' bgcolor='{self._bubble}'><tr><td>"
                f"{pictures + '<br>' if pictures else ''}{text}</td></tr></table>"
            )
        else:
            body = self._markdown(m) if m.content else ("<p><i>…</i></p>" if streaming else "")
        if m.failed:
            body += self._error(m)
        footer = self._footer(m, last_reply, streaming)
        return f"<div style='margin-bottom:14px;'>{head}{body}{footer}</div>"

    def loadResource(self, kind: int, url: QUrl):
        """Pictures attached to messages, as thumbnails (decoded once, then cached)."""
        if url.scheme() != "picture":
            return super().loadResource(kind, url)
        key = url.path()
        if key not in self._thumbnails:
            self._thumbnails[key] = self._thumbnail(key)
        return self._thumbnails[key]

    def _thumbnail(self, key: str) -> QImage:
        message_id, _, index = key.rpartition("/")
        message = next((m for m in self._messages if m.id == message_id), None)
        image = QImage()
        if message is not None and index.isdigit() and int(index) < len(message.images):
            with contextlib.suppress(ValueError):  # not base64
                image.loadFromData(base64.b64decode(message.images[int(index)]))
        if image.isNull():  # not a picture Qt can read: a grey square says so
            image = QImage(_THUMBNAIL // 2, _THUMBNAIL // 2, QImage.Format.Format_RGB32)
            image.fill(Qt.GlobalColor.lightGray)
            return image
        if max(image.width(), image.height()) <= _THUMBNAIL:
            return image
        smooth = Qt.TransformationMode.SmoothTransformation
        return image.scaled(_THUMBNAIL, _THUMBNAIL, Qt.AspectRatioMode.KeepAspectRatio, smooth)

    def _markdown(self, m: Message) -> str:
        cached = self._cache.get(m.id)
        if cached is None or cached[0] != m.content:
            rendered = self._renderer.render(m.content, key=m.id)
            cached = (m.content, rendered.html, rendered.code_blocks)
            self._cache[m.id] = cached
        return cached[1]

    @staticmethod
    def _error(m: Message) -> str:
        hint = f"<br>{html.escape(m.hint)}" if m.hint else ""
        return (
            "<table width='100%' cellpadding='8' bgcolor='#fdecea'><tr><td>"
            f"<span style='color:#b42318;'><b>{html.escape(m.error)}</b>{hint}</span><br>"
            "<a href='action:regenerate'>Try again</a></td></tr></table>"
        )

    @staticmethod
    def _footer(m: Message, last_reply: bool, streaming: bool) -> str:
        if streaming:
            return ""
        links = [f"<a href='action:copy:{m.id}'>Copy</a>"]
        if m.role == "user":
            links.append(f"<a href='action:edit:{m.id}'>Edit</a>")
        elif last_reply and not m.failed:
            links.append("<a href='action:regenerate'>Regenerate</a>")
        stats = m.stats.summary() if m.stats else ""
        muted = (
            f"<span style='color:gray;'>{html.escape(stats)}</span>&nbsp;&nbsp;" if stats else ""
        )
        return f"<p style='font-size:small; margin-top:2px;'>{muted}{' · '.join(links)}</p>"

    # links

    def _clicked(self, url: QUrl) -> None:
        href = url.toString()
        target = copy_target(href)
        if target is not None:
            key, number = target
            blocks = self._cache.get(key, ("", "", ()))[2]
            if number < len(blocks):
                self._copy(blocks[number], "Code copied")
            return
        kind, _, arg = href.removeprefix("action:").partition(":")
        if not href.startswith("action:"):
            if url.scheme() in ("http", "https", "mailto"):
                QDesktopServices.openUrl(url)
        elif kind == "copy":
            self._copy(self.message_text(arg), "Message copied")
        elif kind == "edit":
            self.edit_requested.emit(arg, self.message_text(arg))
        elif kind == "regenerate":
            self.regenerate_requested.emit()

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(what)
