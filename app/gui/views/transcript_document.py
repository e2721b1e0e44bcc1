"""Updating a transcript's document in place while a reply streams: only the last message's
part is replaced, so a frame costs one message, not the whole chat (bench/RESULTS.md, "App:
streaming frame time"). ``setHtml`` leaves each message as one top-level frame (its table)
after an empty line; that is what the replacement relies on, and checks."""

from __future__ import annotations

from PySide6.QtGui import QTextCursor, QTextDocument

from localllm.app.gui.design.tokens import Palette
from localllm.app.gui.views.transcript_boxes import Boxes

__all__ = ["only_last_changed", "replace_last"]


def only_last_changed(document: QTextDocument, shown: list[str] | None, blocks: list[str]) -> bool:
    """Whether ``blocks`` differ from the ``shown`` ones in the last message alone (and the
    document still has one frame per message)."""
    return (
        shown is not None
        and len(blocks) == len(shown) > 0
        and blocks[-1] != shown[-1]
        and blocks[:-1] == shown[:-1]
        and len(document.rootFrame().childFrames()) == len(blocks)
    )


def replace_last(document: QTextDocument, block: str, boxes: Boxes, palette: Palette) -> None:
    """Put ``block`` in place of the last message: from the empty line before its table (as
    ``setHtml`` leaves it between messages) to the document's end."""
    start = document.rootFrame().childFrames()[-1].firstPosition() - 1
    boxes.forget_last()  # its tables go
    cursor = QTextCursor(document)
    cursor.setPosition(start)
    cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
    cursor.insertHtml(block)
    boxes.find_last(document, palette)
