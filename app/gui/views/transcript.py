"""The conversation as one scrolling document: Markdown replies, code with copy links,
per-message actions, stats under each reply, errors in place with what to do next, and a
thinking model's reasoning folded into one line above its reply until it is clicked open.

Redrawing on every streamed token would be wasteful, so changes are coalesced (about 25 frames
a second) and each finished message's HTML is cached. The view follows new content while the
user is at the end and stays where they are when they have scrolled up to read
(``BottomFollower``); very long messages are folded until "Show all" is clicked.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QImage
from PySide6.QtWidgets import QTextBrowser

from app.gui.markdown_html import MarkdownRenderer, copy_target
from app.gui.state.chat.memory import ChatMemory
from app.gui.state.chat.records import Message
from app.gui.views.scroll_follow import BottomFollower
from app.gui.views.transcript_html import EMPTY, BlockStyle, message_block
from app.gui.views.transcript_memory import memory_divider

__all__ = ["Transcript"]

_FRAME_MS = 40
_THUMBNAIL = 160  # pixels, the longest side of an image shown in a message
_BUBBLES = {False: "#eef0ff", True: "#2a2d45"}  # the user's messages


class Transcript(QTextBrowser):
    edit_requested = Signal(str, str)  # message id, its text
    regenerate_requested = Signal()
    continue_requested = Signal(str)  # the id of a cut-off reply
    delete_requested = Signal(str)  # message id
    version_requested = Signal(str, int)  # reply id, the version to show
    copied = Signal(str)  # what was copied, for a status message
    source_requested = Signal(str)  # "<reply id>:<number>": a citation was clicked
    tool_decided = Signal(str, str)  # a tool call's id, "approve" | "always" | "deny"

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
        self._expanded: set[str] = set()  # folded messages the user opened with "Show all"
        self._thinking_open: set[str] = set()  # replies whose reasoning the user opened
        self._assistant = "Assistant"
        self._streaming = False
        self._memory = ChatMemory()  # where the model's memory starts (a long chat)
        self._summary_open = False
        self.annotate: Callable[[Message], str] | None = None  # HTML under a message (citations)
        self.follower = BottomFollower(self.verticalScrollBar(), self)
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

    def show_memory(self, memory: ChatMemory) -> None:
        """Mark where the model's memory starts (``transcript_memory``), from the next draw."""
        self._memory = memory

    def follow_end(self) -> None:
        """Go to the end and follow new content (a chat opened, a message sent)."""
        self.follower.to_end()

    def message_text(self, message_id: str) -> str:
        return next((m.content for m in self._messages if m.id == message_id), "")

    # drawing

    def _render(self) -> None:
        style = BlockStyle(self._assistant, self._bubble, self._markdown)
        count = len(self._messages)
        divider = memory_divider(self._memory, self._summary_open)
        blocks = [
            (divider if m.id == self._memory.starts_at else "")
            + message_block(
                m,
                style,
                last=i == count - 1,
                streaming=self._streaming and i == count - 1,
                expanded=m.id in self._expanded,
                thinking_open=m.id in self._thinking_open,
                open_results=self._expanded,
            )
            for i, m in enumerate(self._messages)
        ]
        if self.annotate is not None:
            blocks = [b + self.annotate(m) for b, m in zip(blocks, self._messages, strict=True)]
        with self.follower.redrawing():
            self.setHtml("".join(blocks) or EMPTY)

    def loadResource(self, kind: int, url: QUrl):
        """Images attached to messages, as thumbnails (decoded once, then cached)."""
        if url.scheme() != "image":
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
        if image.isNull():  # not an image Qt can read: a grey square says so
            image = QImage(_THUMBNAIL // 2, _THUMBNAIL // 2, QImage.Format.Format_RGB32)
            image.fill(Qt.GlobalColor.lightGray)
            return image
        if max(image.width(), image.height()) <= _THUMBNAIL:
            return image
        smooth = Qt.TransformationMode.SmoothTransformation
        return image.scaled(_THUMBNAIL, _THUMBNAIL, Qt.AspectRatioMode.KeepAspectRatio, smooth)

    def _markdown(self, m: Message, text: str) -> str:
        cached = self._cache.get(m.id)
        if cached is None or cached[0] != text:
            rendered = self._renderer.render(text, key=m.id)
            cached = (text, rendered.html, rendered.code_blocks)
            self._cache[m.id] = cached
        return cached[1]

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
        if not href.startswith("action:"):
            if url.scheme() in ("http", "https", "mailto"):
                QDesktopServices.openUrl(url)
            return
        kind, _, arg = href.removeprefix("action:").partition(":")
        if kind == "copy":
            self._copy(self.message_text(arg), "Message copied")
        elif kind == "edit":
            self.edit_requested.emit(arg, self.message_text(arg))
        elif kind == "regenerate":
            self.regenerate_requested.emit()
        elif kind == "continue":
            self.continue_requested.emit(arg)
        elif kind == "delete":
            self.delete_requested.emit(arg)
        elif kind == "version":
            message_id, _, number = arg.partition(":")
            if number.isdigit():
                self.version_requested.emit(message_id, int(number))
        elif kind == "tool":
            call_id, _, choice = arg.partition(":")
            self.tool_decided.emit(call_id, choice)
        elif kind == "unfold":
            self._expanded.add(arg)
            self.follower.hold()  # read it from here, not from its end
            self._render()
        elif kind == "fold":
            self._expanded.discard(arg)
            self._render()
        elif kind == "summary":
            self._summary_open = not self._summary_open
            self.follower.hold()
            self._render()
        elif kind == "source":
            self.source_requested.emit(arg)
        elif kind == "thinking":
            self._thinking_open ^= {arg}
            self.follower.hold()  # read it from here, not from its end
            self._render()

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(what)
