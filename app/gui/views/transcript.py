"""The conversation as one scrolling document: the user's bubbles and the model's replies in
cards, Markdown with code blocks that name their language and copy with one click, a quiet line
of numbers under each reply that opens on demand (live while it streams), errors in place with
what to do next, and a thinking model's reasoning folded into one line above its reply until it
is clicked open. The round shapes are painted under the text (``transcript_boxes``).

A message's actions (``MessageActions``) appear over its footer, and the message is
highlighted, while the pointer is on it; from the keyboard, Alt+Up and Alt+Down pick a message
(the last one when the conversation gets the focus with Tab) and Tab goes to its buttons. The
text keeps a readable width, centred.

Redrawing on every streamed token would be wasteful, so changes are coalesced (about 25 frames
a second) and each finished message's HTML is cached; when only the last message changed (a
reply streaming, then finished) only its part of the document is replaced, so a frame costs the
same at the end of a long chat as in a short one. The view follows new content while the
user is at the end and stays where they are when they have scrolled up to read
(``BottomFollower``); very long messages are folded until "Show all" is clicked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QPoint, QRectF, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QDesktopServices,
    QGuiApplication,
    QKeyEvent,
    QPainter,
)
from PySide6.QtWidgets import QApplication, QFrame, QTextBrowser, QWidget

from localllm.app.gui.design.tokens import READING_WIDTH, palette
from localllm.app.gui.icons import Icons
from localllm.app.gui.markdown_html import MarkdownRenderer, copy_target
from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.state.chat.transcript_actions import (
    Action,
    ContinueReply,
    CopyMessage,
    DecideTool,
    DeleteMessage,
    EditMessage,
    LoadAnyway,
    OpenSource,
    ReadAloud,
    Regenerate,
    ShowAll,
    ShowLess,
    ShowVersion,
    ToggleStats,
    ToggleSummary,
    ToggleThinking,
    parse,
)
from localllm.app.gui.views.message_actions import MessageActions
from localllm.app.gui.views.scroll_follow import BottomFollower
from localllm.app.gui.views.transcript_boxes import Boxes
from localllm.app.gui.views.transcript_document import only_last_changed, replace_last
from localllm.app.gui.views.transcript_html import BlockStyle, empty_html, message_block
from localllm.app.gui.views.transcript_images import TranscriptImages
from localllm.app.gui.views.transcript_memory import memory_divider

__all__ = ["Transcript"]

_FRAME_MS = 40
_SIDE = 16  # pixels of margin beside the text at the least
_PICK = {Qt.Key.Key_Up: -1, Qt.Key.Key_Down: 1}


class Transcript(QTextBrowser):
    edit_requested = Signal(str, str)  # message id, its text
    regenerate_requested = Signal()
    load_anyway_requested = Signal()  # answer again, loading the model though its plan does not fit
    continue_requested = Signal(str)  # the id of a cut-off reply
    delete_requested = Signal(str)  # message id
    version_requested = Signal(str, int)  # reply id, the version to show
    copied = Signal(str)  # what was copied, for a status message
    read_aloud_requested = Signal(str)  # an answer's text
    source_requested = Signal(str)  # "<reply id>:<number>": a citation was clicked
    tool_decided = Signal(str, str)  # a tool call's id, "approve" | "always" | "deny"

    def __init__(self, parent: QWidget | None = None, icons: Icons | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setReadOnly(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setObjectName("transcript")
        self.setAccessibleName("Conversation")
        self.anchorClicked.connect(self._clicked)
        self._renderer = MarkdownRenderer()
        self._palette = palette(False)
        self._images = TranscriptImages(icons)
        self.document().setDocumentMargin(12)
        self.document().setUndoRedoEnabled(False)  # replacing the last message is no edit
        self._shown: list[str] | None = None  # each message's HTML in the document (None: redo)
        self._block_cache: dict[str, tuple[tuple, str]] = {}  # by id: what it was drawn from, HTML
        self._cache: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        self._messages: tuple[Message, ...] = ()
        self._expanded: set[str] = set()  # folded messages the user opened with "Show all"
        self._thinking_open: set[str] = set()  # replies whose reasoning the user opened
        self._assistant = "Assistant"
        self._streaming = False
        self._live: ReplyStats | None = None
        self._boxes = Boxes()
        self._memory = ChatMemory()  # where the model's memory starts (a long chat)
        self._summary_open = False
        self._stats_open: set[str] = set()  # replies whose numbers the user opened
        self.annotate: Callable[[Message], str] | None = None  # HTML under a message (citations)
        self.follower = BottomFollower(self.verticalScrollBar(), self)
        # not ``actions``: that would hide QWidget.actions()
        self.message_actions = MessageActions(icons, self.viewport())
        self.message_actions.triggered.connect(self._act)
        self._active = ""  # the message whose actions show ("" none)
        self.verticalScrollBar().valueChanged.connect(lambda _v: self._place_actions())
        self._timer = QTimer(self, singleShot=True, interval=_FRAME_MS)
        self._timer.timeout.connect(self._render)
        self._render()

    def set_dark(self, dark: bool) -> None:
        self._renderer = MarkdownRenderer(dark)
        self._palette = palette(dark)
        self._images.retheme()
        self._cache.clear()
        self._block_cache.clear()
        self._shown = None
        self.message_actions.retheme()
        self._render()

    def show_messages(
        self,
        messages: tuple[Message, ...],
        assistant: str,
        streaming: bool,
        live: ReplyStats | None = None,
    ):
        """Draw soon (coalesced while streaming), or now when the reply is complete; ``live``:
        the numbers of the reply streaming now, for its quiet line."""
        self._messages, self._assistant, self._streaming = messages, assistant, streaming
        self._live = live
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
        blocks = self._blocks()
        with self.follower.redrawing():
            if only_last_changed(self.document(), self._shown, blocks):
                replace_last(self.document(), blocks[-1], self._boxes, self._palette)
            elif blocks != self._shown:
                self.setHtml("".join(blocks) or empty_html(self._palette))
                self._boxes.find(self.document(), self._palette)
            self._shown = blocks
            self._centre()
            self._finish_layout()
        self._place_actions()

    def _blocks(self) -> list[str]:
        """Each message's HTML (``transcript_html``)."""
        style = BlockStyle(
            self._assistant,
            self._palette,
            self._markdown,
            frozenset(self._stats_open),
            self._live,
        )
        count = len(self._messages)
        divider = memory_divider(self._memory, self._summary_open, self._palette)
        before = {self._memory.starts_at: divider}
        drawn = [
            self._block(m, style, i == count - 1, before.get(m.id, ""))
            for i, m in enumerate(self._messages)
        ]
        self._block_cache = {m.id: d for m, d in zip(self._messages, drawn, strict=True)}
        return [html for _inputs, html in drawn]

    def _block(self, m: Message, style: BlockStyle, last: bool, before: str) -> tuple[tuple, str]:
        """What ``m``'s HTML is drawn from, and the HTML: built again only when that changed,
        so a streaming frame builds one message's, not a long chat's thousands."""
        streaming = self._streaming and last
        after = self.annotate(m) if self.annotate is not None else ""
        live = style.live if streaming else None
        opened = (m.id in style.stats_open, m.id in self._thinking_open)
        expanded = frozenset(self._expanded)  # its own, and its tool calls' results
        inputs = (m, style.assistant, style.palette, live, last, opened, expanded, before, after)
        cached = self._block_cache.get(m.id)
        if cached is not None and cached[0] == inputs:
            return cached
        html = message_block(
            m,
            style,
            last=last,
            streaming=streaming,
            expanded=m.id in self._expanded,
            thinking_open=m.id in self._thinking_open,
            open_results=self._expanded,
            before=before,
            after=after,
        )
        return inputs, html

    # the readable column

    def _centre(self) -> None:
        side = max(_SIDE, (self.viewport().width() - READING_WIDTH) // 2)
        root = self.document().rootFrame()
        frame = root.frameFormat()
        if frame.leftMargin() != side or frame.rightMargin() != side:
            frame.setLeftMargin(side)
            frame.setRightMargin(side)
            root.setFrameFormat(frame)

    def _finish_layout(self) -> None:
        """Lay the document out to its end and give the scroll bar its true range. Qt lays a
        long document out lazily and extrapolates the range meanwhile; measuring a message
        (its box, its actions) finishes the layout without telling the scroll bar, which then
        kept the guess: blank space below the last message, or an end it never reached."""
        layout = self.document().documentLayout()
        layout.documentSizeChanged.emit(layout.documentSize())

    def paintEvent(self, event) -> None:
        """The bubbles, cards and code blocks with round corners, and the highlight of the
        message whose actions show, under the text (``transcript_boxes``)."""
        ids = [m.id for m in self._messages]
        active = self.active_message()
        painter = QPainter(self.viewport())
        highlight = ids.index(active) if active in ids else None
        self._boxes.paint(self, painter, QRectF(event.rect()), highlight, self._palette.hover)
        painter.end()
        super().paintEvent(event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        with self.follower.redrawing():
            self._centre()
            self._finish_layout()
        self._place_actions()

    # a message's actions: under the pointer, or picked with the keyboard

    def active_message(self) -> str:
        return self._active if self.message_actions.isVisible() else ""

    def pick(self, message_id: str) -> None:
        """Show ``message_id``'s actions ("" hides them) and scroll it into view."""
        self._active = message_id
        self._place_actions(reveal=True)

    def _message_rects(self) -> list[QRectF]:
        layout = self.document().documentLayout()
        frames = self.document().rootFrame().childFrames()
        if len(frames) != len(self._messages):
            return []
        return [layout.frameBoundingRect(frame) for frame in frames]

    def _message_at(self, point: QPoint) -> str:
        y = point.y() + self.verticalScrollBar().value()
        for message, rect in zip(self._messages, self._message_rects(), strict=False):
            if rect.top() <= y <= rect.bottom():
                return message.id
        return ""

    def _place_actions(self, reveal: bool = False) -> None:
        ids = [m.id for m in self._messages]
        rects = self._message_rects() if self._active in ids else []
        if not rects:
            if self.message_actions.isVisible():
                self.message_actions.hide()
                self.viewport().update()
            return
        row = ids.index(self._active)
        last = row == len(ids) - 1
        self.message_actions.show_for(self._messages[row], last, self._streaming and last)
        rect, bar = rects[row], self.verticalScrollBar()
        if reveal and not (bar.value() <= rect.bottom() - bar.pageStep() <= rect.top()):
            self.follower.hold()
            bar.setValue(int(rect.bottom()) - bar.pageStep() + 12)
        width, height = (
            self.message_actions.sizeHint().width(),
            self.message_actions.sizeHint().height(),
        )
        x = int(rect.right()) - width + 1  # over the footer's switcher, to the message's edge
        y = int(rect.bottom()) - bar.value() - height - 4
        self.message_actions.setGeometry(x, y, width, height)
        self.message_actions.setVisible(True)
        self.message_actions.raise_()
        self.viewport().update()  # the message's highlight

    def mouseMoveEvent(self, event) -> None:
        super().mouseMoveEvent(event)
        hovered = self._message_at(event.position().toPoint())
        if hovered != self._active and not self._actions_have_focus():
            self._active = hovered
            self._place_actions()

    def leaveEvent(self, event: QEvent) -> None:
        super().leaveEvent(event)
        inside = self.viewport().rect().contains(self.viewport().mapFromGlobal(self.cursor().pos()))
        if not inside and not self._actions_have_focus() and not self.hasFocus():
            self._active = ""
            self.message_actions.hide()
            self.viewport().update()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        step = _PICK.get(Qt.Key(event.key()))
        alt = event.modifiers() & Qt.KeyboardModifier.AltModifier
        ids = [m.id for m in self._messages]
        if step is None or not alt or not ids:
            return super().keyPressEvent(event)
        row = ids.index(self._active) + step if self._active in ids else len(ids) - 1
        self.pick(ids[max(0, min(len(ids) - 1, row))])

    def focusInEvent(self, event) -> None:
        super().focusInEvent(event)
        tabbed = event.reason() in (
            Qt.FocusReason.TabFocusReason,
            Qt.FocusReason.BacktabFocusReason,
        )
        if tabbed and self._messages and not self.message_actions.isVisible():
            self.pick(self._messages[-1].id)

    def focusNextPrevChild(self, next: bool) -> bool:
        """Tab from the conversation goes to the picked message's buttons first, then through
        them, then on to the window's next control (never into the text's links, which Tab
        reaches while no message is picked)."""
        buttons = self.message_actions.buttons() if self.message_actions.isVisible() else []
        focused = QApplication.focusWidget()
        if focused in buttons:
            step = buttons.index(focused) + (1 if next else -1)
            if 0 <= step < len(buttons):
                buttons[step].setFocus(Qt.FocusReason.TabFocusReason)
            elif step < 0:
                self.setFocus(Qt.FocusReason.BacktabFocusReason)
            else:
                return QWidget.focusNextPrevChild(self, next)  # on past the conversation
            return True
        if next and self.hasFocus() and buttons:
            buttons[0].setFocus(Qt.FocusReason.TabFocusReason)
            return True
        return super().focusNextPrevChild(next)

    def _actions_have_focus(self) -> bool:
        focused = QGuiApplication.focusObject()
        return isinstance(focused, QWidget) and self.message_actions.isAncestorOf(focused)

    # resources

    def loadResource(self, kind: int, url: QUrl | str) -> Any:
        """Images attached to messages, as thumbnails; the icons and the footer's spacer."""
        image = self._images.image(QUrl(url), self._messages, self._palette.muted)
        return image if image is not None else super().loadResource(kind, url)

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
        action = parse(url.toString(QUrl.ComponentFormattingOption.FullyEncoded))
        if action is not None:
            self._act(action)
        elif url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)

    def _act(self, action: Action) -> None:
        """Do what one of our links or a message's button asks for."""
        match action:
            case CopyMessage(message_id):
                self._copy(self.message_text(message_id), "Message copied")
            case EditMessage(message_id):
                self.edit_requested.emit(message_id, self.message_text(message_id))
            case ReadAloud(message_id):
                self.read_aloud_requested.emit(self.message_text(message_id))
            case Regenerate():
                self.regenerate_requested.emit()
            case LoadAnyway():
                self.load_anyway_requested.emit()
            case ContinueReply(message_id):
                self.continue_requested.emit(message_id)
            case DeleteMessage(message_id):
                self.delete_requested.emit(message_id)
            case ShowVersion(message_id, number):
                self.version_requested.emit(message_id, number)
            case DecideTool(call_id, choice):
                self.tool_decided.emit(call_id, choice)
            case OpenSource(message_id, number):
                self.source_requested.emit(f"{message_id}:{number}")
            case _:
                self._change_view(action)

    def _change_view(self, action: Action) -> None:
        """Open or close a part of the conversation (a long message, reasoning, numbers)."""
        match action:
            case ShowAll(key):
                self._expanded.add(key)
                self.follower.hold()  # read it from here, not from its end
            case ShowLess(key):
                self._expanded.discard(key)
            case ToggleSummary():
                self._summary_open = not self._summary_open
                self.follower.hold()
            case ToggleThinking(message_id):
                self._thinking_open ^= {message_id}
                self.follower.hold()  # read it from here, not from its end
            case ToggleStats(message_id):
                self._stats_open ^= {message_id}
        self._render()

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(what)
