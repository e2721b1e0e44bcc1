"""A model's memory plan as bars: one per device (RAM, each GPU), its parts coloured by what
they are (weights, cache, compute, projector, draft...), against the free memory the plan is
judged by; a legend, and the plan in words beside it.

What to draw comes from ``state.model_plan`` (``bar_rows``, ``plan_lines``); this widget only
paints it, in the page's palette (the colours follow the theme).
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.design.widgets import page_palette
from localllm.app.gui.state.model_plan import GROUP_TONES, BarRow, bar_rows, plan_lines
from localllm.app.gui.state.records import ModelPlan
from localllm.app.gui.state.units import bytes_text
from localllm.app.gui.views.plain_text import plain_label

__all__ = ["PlanBars", "PlanView"]

_BAR_HEIGHT = 14
_LABEL_WIDTH = 56  # "GPU 0", "RAM"
_ROW_GAP = 6


class PlanBars(QWidget):
    """The bars themselves: each device's parts in order, a line where free memory ends."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: tuple[BarRow, ...] = ()
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(160)

    def show_rows(self, rows: tuple[BarRow, ...]) -> None:
        self.rows = rows
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(360, max(1, len(self.rows)) * (_BAR_HEIGHT + _ROW_GAP))

    def minimumSizeHint(self) -> QSize:
        return QSize(160, self.sizeHint().height())

    def paintEvent(self, event) -> None:
        p = page_palette(self)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        width = self.width() - _LABEL_WIDTH - 2
        for i, row in enumerate(self.rows):
            top = i * (_BAR_HEIGHT + _ROW_GAP)
            painter.setPen(QColor(p.muted))
            label = QRectF(0, top, _LABEL_WIDTH, _BAR_HEIGHT)
            painter.drawText(label, Qt.AlignmentFlag.AlignVCenter, row.device)
            whole = QRectF(_LABEL_WIDTH, top, width, _BAR_HEIGHT)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(p.surface_alt))
            painter.drawRoundedRect(whole, 4, 4)
            left = whole.left()
            for segment in row.segments:
                span = width * segment.bytes / row.scale
                painter.setBrush(QColor(getattr(p, GROUP_TONES[segment.group])))
                painter.drawRect(QRectF(left, top, max(span, 1.0), _BAR_HEIGHT))
                left += span
            if row.free is not None and row.free < row.scale:  # where free memory ends
                edge = _LABEL_WIDTH + width * row.free / row.scale
                painter.setPen(QPen(QColor(p.danger), 2))
                painter.drawLine(int(edge), int(top) - 2, int(edge), int(top + _BAR_HEIGHT) + 2)
            painter.setPen(QPen(QColor(p.border_strong), 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(whole.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
        painter.end()


class PlanView(QWidget):
    """The bars, a legend of the groups drawn, and the plan in words (plain text: the daemon's
    reasons may quote a model's name)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bars = PlanBars()
        legend = QWidget()  # clipped where narrow, never widening the page: the words say all
        legend.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.legend = QHBoxLayout(legend)
        self.legend.setContentsMargins(0, 0, 0, 0)
        self.legend.setSpacing(SPACE.md)
        self.words = plain_label(wordWrap=True)
        self.words.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE.xs)
        layout.addWidget(self.bars)
        layout.addWidget(legend)
        layout.addWidget(self.words)
        self.plan: ModelPlan | None = None

    def show_plan(self, plan: ModelPlan) -> None:
        self.plan = plan
        rows = bar_rows(plan)
        self.bars.show_rows(rows)
        self._legend(rows)
        self.words.setText("\n".join(plan_lines(plan)))
        self.setToolTip("\n".join(f"{p.kind}: {p.text}" for p in plan.parts if p.text))

    def show_text(self, text: str) -> None:
        """Words only (while the plan is on its way, or where there is none)."""
        self.plan = None
        self.bars.show_rows(())
        self._legend(())
        self.words.setText(text)

    def _legend(self, rows: tuple[BarRow, ...]) -> None:
        while self.legend.count():
            item = self.legend.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        sizes: dict[str, int] = {}
        for row in rows:
            for segment in row.segments:
                sizes[segment.group] = sizes.get(segment.group, 0) + segment.bytes
        p = page_palette(self)
        for group, size in sizes.items():
            swatch = QLabel()
            swatch.setFixedSize(10, 10)
            colour = getattr(p, GROUP_TONES[group])
            swatch.setStyleSheet(f"background: {colour}; border-radius: 2px;")
            entry = QHBoxLayout()
            entry.setSpacing(SPACE.xs)
            entry.addWidget(swatch)
            entry.addWidget(plain_label(f"{group} {bytes_text(size)}", objectName="caption"))
            holder = QWidget()
            holder.setLayout(entry)
            entry.setContentsMargins(0, 0, 0, 0)
            self.legend.addWidget(holder)
        self.legend.addStretch(1)
