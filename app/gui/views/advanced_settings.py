"""The chat settings' "Advanced" section: top-k, top-p, min-p, repeat penalty, seed and GPU
offload, folded away until asked for.

Every box starts at its special value ("model default", "random", "auto"), which sends
nothing, so the model's own parameters apply until the user picks a value. The GPU box says how
many layers the daemon's plan of the chat's settings puts on the GPU, or that there is no GPU
(then it is off).
"""

from __future__ import annotations

from typing import TypedDict

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import padded_number
from localllm.app.gui.state.chat.records import ChatOptions
from localllm.app.gui.state.fit import GpuLayers, gpu_hint

__all__ = ["AdvancedSettings", "settings_form"]

DEFAULT = "model default"
_SEED_MAX = 2**31 - 1  # what a spin box holds; the daemon takes any integer
_LAYERS_MAX = 1024


def settings_form(parent: QWidget | None = None) -> QFormLayout:
    """The chat settings' one form: each label above its field, in every section (the panel
    is narrow, and "model default (32,768 tokens)" needs the field's whole width)."""
    form = QFormLayout(parent)
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def _int_box(low: int, high: int, special: str = DEFAULT) -> QSpinBox:
    box = QSpinBox(minimum=low - 1, maximum=high)
    box.setSpecialValueText(special)  # shown at the minimum, which means "not set"
    padded_number(box)
    return box


def _float_box(low: float, high: float, step: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox(minimum=low - step, maximum=high, singleStep=step, decimals=2)
    box.setSpecialValueText(DEFAULT)
    padded_number(box)
    return box


def _int_value(box: QSpinBox) -> int | None:
    return None if box.value() == box.minimum() else box.value()


def _float_value(box: QDoubleSpinBox) -> float | None:
    return None if box.value() == box.minimum() else round(box.value(), 2)


class AdvancedValues(TypedDict):
    """The section's values by their Ollama option names (``ChatOptions``'); None: not set."""

    top_k: int | None
    top_p: float | None
    min_p: float | None
    repeat_penalty: float | None
    seed: int | None
    num_gpu: int | None


def _show(box: QSpinBox | QDoubleSpinBox, value: float | None) -> None:
    if isinstance(box, QDoubleSpinBox):
        box.setValue(box.minimum() if value is None else value)
    else:  # an integer option (Qt would drop a fraction the same way)
        box.setValue(box.minimum() if value is None else int(value))


class AdvancedSettings(QWidget):
    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QToolButton()
        self.toggle.setText("Advanced")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.top_k = _int_box(0, 1000)
        self.top_p = _float_box(0.0, 1.0, 0.05)
        self.min_p = _float_box(0.0, 1.0, 0.01)
        self.repeat_penalty = _float_box(0.0, 2.0, 0.05)
        self.seed = _int_box(0, _SEED_MAX, "random")
        self.gpu_layers = _int_box(0, _LAYERS_MAX, "auto")
        self.gpu_hint = QLabel("", wordWrap=True)
        self.gpu_hint.setObjectName("muted")
        self.top_k.setToolTip("Sample from the k likeliest tokens only (0: all of them)")
        self.top_p.setToolTip("Sample from the likeliest tokens that make up this probability")
        self.min_p.setToolTip("Drop tokens less likely than this share of the likeliest one")
        self.repeat_penalty.setToolTip("Above 1 discourages repeating recent tokens; 1 is off")
        self.seed.setToolTip("The same seed and settings give the same reply")
        self.gpu_layers.setToolTip("Layers to put on the GPU; auto fills free GPU memory")
        self.boxes: dict[str, QSpinBox | QDoubleSpinBox] = {
            "top_k": self.top_k,
            "top_p": self.top_p,
            "min_p": self.min_p,
            "repeat_penalty": self.repeat_penalty,
            "seed": self.seed,
            "num_gpu": self.gpu_layers,
        }
        for box in self.boxes.values():
            box.setCorrectionMode(QAbstractSpinBox.CorrectionMode.CorrectToNearestValue)
            box.valueChanged.connect(self.edited)

        self.body = QWidget()
        form = settings_form(self.body)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Top-k", self.top_k)
        form.addRow("Top-p", self.top_p)
        form.addRow("Min-p", self.min_p)
        form.addRow("Repeat penalty", self.repeat_penalty)
        form.addRow("Seed", self.seed)
        form.addRow("GPU layers", self.gpu_layers)
        form.addRow(self.gpu_hint)
        self.body.hide()
        self.toggle.toggled.connect(self._fold)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.toggle)
        layout.addWidget(self.body)
        self.show_gpu(None, has_gpu=False)

    def load(self, options: ChatOptions) -> None:
        for key, box in self.boxes.items():
            box.blockSignals(True)
            _show(box, getattr(options, key))
            box.blockSignals(False)

    def values(self) -> AdvancedValues:
        return AdvancedValues(
            top_k=_int_value(self.top_k),
            top_p=_float_value(self.top_p),
            min_p=_float_value(self.min_p),
            repeat_penalty=_float_value(self.repeat_penalty),
            seed=_int_value(self.seed),
            # no GPU: nothing to offload, whatever a preset says
            num_gpu=_int_value(self.gpu_layers) if self.gpu_layers.isEnabled() else None,
        )

    def show_gpu(self, layers: GpuLayers | None, *, has_gpu: bool) -> None:
        """What offloading can do here: nothing without a GPU, else what the daemon's plan
        of the chat's settings puts on it (``layers``; None: not planned yet)."""
        self.gpu_layers.setEnabled(has_gpu)
        if has_gpu and layers is not None:
            self.gpu_layers.setMaximum(layers.total)
        self.gpu_hint.setText(gpu_hint(layers, has_gpu))

    def _fold(self, open_: bool) -> None:
        self.body.setVisible(open_)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
