"""How full the chat's context is, in the chat's header: a thin bar and "1,234 of 4,096 tokens".

The bar turns to the warning colour when the context is nearly full; the tooltip says what the
numbers are and what to do then.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QSizePolicy, QWidget

from app.gui.design.widgets import set_tone
from app.gui.state.chat.context_use import ContextUse
from app.gui.views.plain_text import plain_label

__all__ = ["ContextMeter"]


class ContextMeter(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.bar = QProgressBar(textVisible=False, maximumWidth=90, maximumHeight=8)
        self.bar.setMinimumWidth(40)
        self.bar.setRange(0, 1000)
        self.label = plain_label(objectName="muted")
        # a narrow window clips the words rather than pushing the header over the model picker
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.label.setMinimumWidth(60)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self.show_use(None)

    def show_use(self, use: ContextUse | None) -> None:
        text = use.text() if use is not None else ""
        self.label.setText(text)
        self.setToolTip(use.advice() if use is not None else "")
        fraction = use.fraction if use is not None else None
        self.bar.setVisible(fraction is not None)
        self.bar.setValue(round((fraction or 0.0) * 1000))
        set_tone(self.bar, "warning" if use is not None and use.nearly_full else "")
        self.setVisible(bool(text))
