"""The images a transcript's HTML names: icons (``icon:NAME``, drawn at 200% so they stay
sharp), the pictures attached to messages (``image:MESSAGE/INDEX``, decoded once and shown as
thumbnails) and the footer's spacer (``spacer:``)."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Sequence

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor, QImage

from localllm.app.gui.icons import Icons
from localllm.app.gui.markdown_html import ICON_SIZE
from localllm.app.gui.state.chat.records import Message

__all__ = ["TranscriptImages"]

_THUMBNAIL = 160  # pixels, the longest side of an image shown in a message


class TranscriptImages:
    def __init__(self, icons: Icons | None = None) -> None:
        self._icons = icons
        self._icon_images: dict[str, QImage] = {}
        self._thumbnails: dict[str, QImage] = {}  # by "message id/index"

    def retheme(self) -> None:
        """Icons are drawn in the theme's muted colour: draw them again."""
        self._icon_images.clear()

    def image(self, url: QUrl, messages: Sequence[Message], muted: str) -> QImage | None:
        """The image ``url`` names; None: not one of ours."""
        if url.scheme() == "spacer":
            image = QImage(1, 1, QImage.Format.Format_ARGB32)
            image.fill(QColor(0, 0, 0, 0))
            return image
        if url.scheme() == "icon":
            return self._icon(url.path(), muted)
        if url.scheme() != "image":
            return None
        key = url.path()
        if key not in self._thumbnails:
            self._thumbnails[key] = _thumbnail(key, messages)
        return self._thumbnails[key]

    def _icon(self, name: str, muted: str) -> QImage:
        if name not in self._icon_images:
            size = ICON_SIZE * 2  # sharp at 200%
            icon = self._icons.get(name, muted) if self._icons else None
            image = (
                icon.pixmap(size, size).toImage()
                if icon
                else QImage(size, size, QImage.Format.Format_ARGB32)
            )
            if icon is None:
                image.fill(QColor(0, 0, 0, 0))
            self._icon_images[name] = image
        return self._icon_images[name]


def _thumbnail(key: str, messages: Sequence[Message]) -> QImage:
    message_id, _, index = key.rpartition("/")
    message = next((m for m in messages if m.id == message_id), None)
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
