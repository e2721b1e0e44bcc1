"""The transcript's rounded shapes, painted under its text: the user's bubbles, each reply's
card, code blocks (with the band of their header), a thinking model's reasoning, tool calls and
errors, and the soft highlight of the message under the pointer.

``QTextDocument`` draws tables with square corners only, so each kind of box is marked in the
HTML by its table's background colour (``BOX_COLOURS``: the palette's bubble, surface, code,
surface_alt and danger_soft). After each layout ``find`` takes the marks off (Qt no longer paints
a square there) and remembers the tables, message by message (``find_last`` again for the last
message alone, when only a streaming reply was redrawn); ``paint`` draws them rounded, in
document order (a card before the code blocks in it), from where the layout put them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QPainter,
    QPainterPath,
    QPen,
    QTextDocument,
    QTextFrame,
    QTextTable,
)

from localllm.app.gui.design.tokens import RADIUS, Palette

__all__ = ["BoxStyle", "Boxes", "box_styles"]

_HIGHLIGHT_PAD = 6  # pixels the highlight reaches around a message's box


@dataclass(frozen=True, slots=True)
class BoxStyle:
    fill: str
    edge: str | None  # a 1-pixel outline, or none
    radius: int
    header: str | None = None  # the band behind the first row (a code block's language, Copy)
    message: bool = False  # the message's own box (a bubble or a card), not one inside it


def box_styles(p: Palette) -> dict[str, BoxStyle]:
    """Each box by the colour that marks it in the HTML (``#rrggbb``)."""
    return {
        p.bubble: BoxStyle(p.bubble, None, 14, message=True),
        p.surface: BoxStyle(p.surface, p.border, RADIUS.lg, message=True),
        p.code: BoxStyle(p.code, p.border, RADIUS.md, header=p.code_header),
        p.surface_alt: BoxStyle(p.surface_alt, None, RADIUS.md),
        p.danger_soft: BoxStyle(p.danger_soft, None, RADIUS.md),
    }


@dataclass(frozen=True, slots=True)
class _Box:
    table: QTextTable
    style: BoxStyle


class Boxes:
    def __init__(self) -> None:
        self._by_message: list[list[_Box]] = []  # the boxes of each message, in order

    def find(self, document: QTextDocument, palette: Palette) -> None:
        """Take the marks off the tables of a freshly set document and remember them."""
        styles = box_styles(palette)
        frames = document.rootFrame().childFrames()
        self._by_message = [list(_marked(message, styles)) for message in frames]

    def find_last(self, document: QTextDocument, palette: Palette) -> None:
        """The same for the last message alone, just put in place of the one before it."""
        frames = document.rootFrame().childFrames()
        if not frames or len(frames) != len(self._by_message):
            self.find(document, palette)
            return
        self._by_message[-1] = list(_marked(frames[-1], box_styles(palette)))

    def forget_last(self) -> None:
        """Before the last message's tables are taken out of the document."""
        if self._by_message:
            self._by_message[-1] = []

    def paint(self, view, painter: QPainter, clip: QRectF, highlight: int | None, tint: str):
        """Draw every box that meets ``clip`` (viewport pixels), the highlight (of the message
        numbered ``highlight``, in ``tint``) first."""
        layout = view.document().documentLayout()
        offset = QPointF(view.horizontalScrollBar().value(), view.verticalScrollBar().value())
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        frames = view.document().rootFrame().childFrames()
        if highlight is not None and highlight < len(frames):
            area = layout.frameBoundingRect(frames[highlight]).translated(-offset)
            own = self._own(highlight)
            if own is not None:  # from the message's box down, not its divider above
                area.setTop(_outline(layout, own).top() - offset.y() - _HIGHLIGHT_PAD)
            area.adjust(-_HIGHLIGHT_PAD, 0, _HIGHLIGHT_PAD, 0)
            if area.intersects(clip):
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(tint))
                painter.drawRoundedRect(area, RADIUS.lg, RADIUS.lg)
        for message in _meeting(layout, frames, clip.translated(offset), len(self._by_message)):
            for box in self._by_message[message]:
                rect = _outline(layout, box.table).translated(-offset)
                if rect.isValid() and rect.intersects(clip):
                    _draw(view, painter, box, rect)

    def _own(self, message: int) -> QTextTable | None:
        """The message's bubble or card."""
        if message >= len(self._by_message):
            return None
        return next((b.table for b in self._by_message[message] if b.style.message), None)


def _meeting(layout, frames: list[QTextFrame], area: QRectF, count: int) -> range:
    """The messages whose frames meet ``area`` (document pixels), found by bisection: a long
    chat's thousands of boxes are not all measured for each paint. All of them while the
    layout has not reached the end (the frames' places are not known yet)."""
    if len(frames) != count or not frames or not layout.frameBoundingRect(frames[-1]).isValid():
        return range(count)
    top, bottom = area.top() - _HIGHLIGHT_PAD, area.bottom() + _HIGHLIGHT_PAD
    first = bisect.bisect_left(frames, top, key=lambda f: layout.frameBoundingRect(f).bottom())
    last = bisect.bisect_right(frames, bottom, key=lambda f: layout.frameBoundingRect(f).top())
    return range(first, max(first, last))


def _outline(layout, table: QTextTable) -> QRectF:
    """Where a table is drawn, in document pixels. For a table inside another, Qt's bounding
    rectangle starts where its first cell's text does: its padding further in."""
    rect = layout.frameBoundingRect(table)
    if table.parentFrame() is not None and table.parentFrame().parentFrame() is not None:
        padding = table.format().cellPadding()
        rect.translate(-padding, -padding)
    return rect


def _marked(frame: QTextFrame, styles: dict[str, BoxStyle]):
    """The marked tables in ``frame``, outer before inner, their marks taken off."""
    for child in frame.childFrames():
        if isinstance(child, QTextTable):
            brush = child.format().background()
            marked = brush.style() != Qt.BrushStyle.NoBrush
            style = styles.get(brush.color().name()) if marked else None
            if style is not None:
                plain = child.format()
                plain.clearBackground()
                child.setFormat(plain)
                yield _Box(child, style)
        yield from _marked(child, styles)


def _draw(view, painter: QPainter, box: _Box, rect: QRectF) -> None:
    style, radius = box.style, box.style.radius
    shape = rect.adjusted(0.5, 0.5, -0.5, -0.5)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(style.header or style.fill))
    painter.drawRoundedRect(shape, radius, radius)
    if style.header is not None and box.table.rows() > 1:  # the body under the header band
        padding = box.table.format().cellPadding()
        top = view.cursorRect(box.table.cellAt(1, 0).firstCursorPosition()).top() - padding
        body = QPainterPath()
        body.addRoundedRect(shape, radius, radius)
        below = QPainterPath()
        below.addRect(QRectF(shape.left(), top, shape.width(), shape.bottom() - top))
        painter.setBrush(QColor(style.fill))
        painter.drawPath(body.intersected(below))
    if style.edge is not None:
        painter.setPen(QPen(QColor(style.edge), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRoundedRect(shape, radius, radius)
