"""How full the chat's context is, in the chat's header: a thin bar and "Context: 1,234 of 4,096
tokens (30%)", or "1,234 of 4,096 (30%)" or "30%" where the header is narrow (the chat settings
open at 1,024 px).

The bar turns to the warning colour when the context is nearly full; the tooltip says what the
numbers are and what to do then.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QSizePolicy, QWidget

from localllm.app.gui.design.widgets import set_tone
from localllm.app.gui.state.chat.context_use import ContextUse
from localllm.app.gui.views.plain_text import plain_label

__all__ = ["ContextMeter"]


class ContextMeter(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = QProgressBar(textVisible=False)
        self.bar.setMaximumSize(90, 8)
        self.bar.setMinimumWidth(40)
        self.bar.setRange(0, 1000)
        self.label = plain_label(objectName="muted")
        # a narrow window clips the words rather than pushing the header over the model picker
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.label.setMinimumWidth(32)  # "100%"
        self._texts: tuple[str, ...] = ("",)  # the sentence and shorter forms
        self.label.installEventFilter(self)  # its width decides which
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self.show_use(None)

    def show_use(self, use: ContextUse | None) -> None:
        text = use.text() if use is not None else ""
        self._texts = use.texts() if use is not None else ("",)
        self._fit()
        self.setToolTip(use.advice() if use is not None else "")
        fraction = use.fraction if use is not None else None
        self.bar.setVisible(fraction is not None)
        self.bar.setValue(round((fraction or 0.0) * 1000))
        set_tone(self.bar, "warning" if use is not None and use.nearly_full else "")
        self.setVisible(bool(text))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.label and event.type() == QEvent.Type.Resize:
            self._fit()
        return super().eventFilter(watched, event)

    def _fit(self) -> None:
        """The longest of the texts that fits (the shortest when none does)."""
        room, metrics = self.label.width(), self.label.fontMetrics()
        fitting = (t for t in self._texts if metrics.horizontalAdvance(t) <= room)
        self.label.setText(next(fitting, self._texts[-1]))
