"""The application stylesheet, built from the tokens: one place for how every control looks in
each state (rest, hover, pressed, disabled, keyboard focus).

Views pick a variant with a dynamic property (``kind``: "primary", "ghost", "danger", "icon",
"nav", "chip") or an object name ("muted", "problem", "pageTitle", "card"), never with colours of
their own. ``images`` maps the few drawn parts a stylesheet needs as files (the check mark, the
arrows) to paths of copies tinted for this palette.
"""

from __future__ import annotations

from collections.abc import Mapping

from localllm.app.gui.design.tokens import RADIUS, SPACE, TYPE, Palette

__all__ = ["stylesheet"]


def stylesheet(p: Palette, images: Mapping[str, str]) -> str:
    return "\n".join(
        part(p, images)
        for part in (_base, _buttons, _inputs, _choices, _lists, _tables, _chrome, _labels)
    )


def _base(p: Palette, _images) -> str:
    return f"""
QMainWindow, QDialog {{ background: {p.window}; }}
QWidget#page {{ background: {p.surface}; border-left: 1px solid {p.border}; }}
QToolTip {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border_strong};
    border-radius: {RADIUS.sm}px; padding: 4px 8px; }}
QSplitter::handle {{ background: transparent; }}
QSplitter::handle:hover {{ background: {p.border}; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 2px; }}
QScrollBar:horizontal {{ background: transparent; height: 10px; margin: 2px; }}
QScrollBar::handle {{ background: {p.border_strong}; border-radius: 3px; min-height: 28px;
    min-width: 28px; }}
QScrollBar::handle:hover {{ background: {p.faint}; }}
QScrollBar::add-line, QScrollBar::sub-line {{ width: 0; height: 0; }}
QScrollBar::add-page, QScrollBar::sub-page {{ background: transparent; }}
"""


def _buttons(p: Palette, _images) -> str:
    r = RADIUS.md
    return f"""
QPushButton {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border_strong};
    border-radius: {r}px; padding: 5px 14px; min-height: 20px; }}
QPushButton:hover {{ background: {p.hover}; }}
QPushButton:pressed, QPushButton:checked {{ background: {p.pressed}; }}
QPushButton:focus {{ border: 2px solid {p.accent}; padding: 4px 13px; }}
QPushButton:disabled {{ color: {p.faint}; background: {p.surface_alt}; border-color: {p.border}; }}
QPushButton[kind="primary"] {{ background: {p.accent}; color: {p.on_accent};
    border-color: {p.accent}; font-weight: 600; }}
QPushButton[kind="primary"]:hover {{ background: {p.accent_hover}; }}
QPushButton[kind="primary"]:pressed {{ background: {p.accent_pressed}; }}
QPushButton[kind="primary"]:focus {{ border: 2px solid {p.text}; }}
QPushButton[kind="primary"]:disabled {{ background: {p.surface_alt}; color: {p.faint};
    border-color: {p.border}; }}
QPushButton[kind="danger"] {{ color: {p.danger}; }}
QPushButton[kind="ghost"], QToolButton {{ background: transparent; border: 1px solid transparent;
    border-radius: {r}px; color: {p.text}; padding: 4px 8px; }}
QPushButton[kind="ghost"]:hover, QToolButton:hover {{ background: {p.hover}; }}
QPushButton[kind="ghost"]:pressed, QToolButton:pressed, QToolButton:checked {{
    background: {p.pressed}; }}
QToolButton:focus, QPushButton[kind="ghost"]:focus {{ border: 2px solid {p.accent}; }}
QToolButton:disabled {{ color: {p.faint}; }}
QToolButton[kind="icon"] {{ padding: 4px; }}
QToolButton[kind="send"] {{ background: {p.accent}; border-radius: 16px; padding: 6px; }}
QToolButton[kind="send"]:hover {{ background: {p.accent_hover}; }}
QToolButton[kind="send"]:disabled {{ background: {p.border_strong}; }}
QToolButton[kind="send"]:focus {{ border: 2px solid {p.text}; }}
QToolButton[kind="chip"] {{ border: 1px solid {p.border}; border-radius: 12px;
    padding: 2px 10px; color: {p.muted}; }}
QToolButton::menu-indicator {{ image: none; width: 0; }}
QToolButton[kind="mic"] {{ padding: 4px 14px 4px 4px; }}
QToolButton[kind="mic"]::menu-button {{ border: none; background: transparent; width: 14px; }}
"""


def _inputs(p: Palette, images) -> str:
    r = RADIUS.md
    return f"""
QLineEdit, QPlainTextEdit, QTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    background: {p.surface}; color: {p.text}; border: 1px solid {p.border_strong};
    border-radius: {r}px; padding: 4px 8px; selection-background-color: {p.accent};
    selection-color: {p.on_accent}; }}
QLineEdit, QSpinBox, QDoubleSpinBox, QComboBox {{ min-height: 22px; }}
QLineEdit:hover, QPlainTextEdit:hover, QSpinBox:hover, QDoubleSpinBox:hover,
QComboBox:hover {{ border-color: {p.faint}; }}
QLineEdit:focus, QPlainTextEdit:focus, QTextEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus,
QComboBox:focus {{ border: 2px solid {p.accent}; padding: 3px 7px; }}
QLineEdit:disabled, QPlainTextEdit:disabled, QSpinBox:disabled, QDoubleSpinBox:disabled,
QComboBox:disabled {{ color: {p.faint}; background: {p.surface_alt}; border-color: {p.border}; }}
QLineEdit:read-only {{ background: {p.surface_alt}; }}
QComboBox::drop-down {{ border: none; width: 22px; }}
QComboBox {{ combobox-popup: 0; }}  /* a plain list of every choice, not a menu over the box */
QDialogButtonBox {{ dialogbuttonbox-buttons-have-icons: 0; }}
QComboBox::down-arrow {{ image: url("{images["down"]}"); width: 12px; height: 12px; }}
QComboBox QAbstractItemView {{ background: {p.surface}; color: {p.text};
    border: 1px solid {p.border_strong}; selection-background-color: {p.accent_soft};
    selection-color: {p.text}; outline: 0; padding: 4px; }}
QSpinBox::up-button, QDoubleSpinBox::up-button, QSpinBox::down-button,
QDoubleSpinBox::down-button {{ border: none; width: 18px; }}
QSpinBox::up-arrow, QDoubleSpinBox::up-arrow {{ image: url("{images["up"]}"); width: 10px;
    height: 10px; }}
QSpinBox::down-arrow, QDoubleSpinBox::down-arrow {{ image: url("{images["down"]}");
    width: 10px; height: 10px; }}
QTextBrowser#transcript {{ border: none; background: {p.surface}; padding: 0; }}
QFrame#messageActions {{ background: {p.surface}; border: 1px solid {p.border};
    border-radius: {RADIUS.md}px; }}
QPlainTextEdit#composerEditor {{ border: none; background: transparent; padding: 2px; }}
QFrame#composer {{ background: {p.surface}; border: 1px solid {p.border_strong};
    border-radius: {RADIUS.lg}px; }}
QFrame#composer[focused="true"] {{ border: 2px solid {p.accent}; }}
"""


def _choices(p: Palette, images) -> str:
    return f"""
QCheckBox, QRadioButton {{ color: {p.text}; spacing: {SPACE.sm}px; }}
QCheckBox::indicator {{ width: 16px; height: 16px; border: 1.5px solid {p.border_strong};
    background: {p.surface}; border-radius: 4px; }}
QRadioButton::indicator {{ width: 14px; height: 14px; border: 2px solid {p.border_strong};
    background: {p.surface}; border-radius: 9px; }}
QCheckBox::indicator:hover, QRadioButton::indicator:hover {{ border-color: {p.accent}; }}
QCheckBox::indicator:checked {{ background: {p.accent}; border-color: {p.accent};
    image: url("{images["check"]}"); }}
QRadioButton::indicator:checked {{ border-color: {p.accent}; background: qradialgradient(
    cx:0.5, cy:0.5, radius:0.5, fx:0.5, fy:0.5, stop:0 {p.accent}, stop:0.55 {p.accent},
    stop:0.65 {p.surface}, stop:1 {p.surface}); }}
QCheckBox:focus, QRadioButton:focus {{ color: {p.accent}; }}
QCheckBox::indicator:disabled {{ background: {p.surface_alt}; border-color: {p.border}; }}
QProgressBar {{ background: {p.surface_alt}; border: none; border-radius: 4px;
    color: {p.text}; text-align: center; min-height: 8px; }}
QProgressBar::chunk {{ background: {p.accent}; border-radius: 4px; }}
QProgressBar[tone="warning"]::chunk {{ background: {p.warning}; }}
QProgressBar[tone="danger"]::chunk {{ background: {p.danger}; }}
"""


def _lists(p: Palette, _images) -> str:
    r = RADIUS.md
    return f"""
QListView, QTreeView {{ background: {p.surface}; color: {p.text}; border: none; outline: 0; }}
QListView::item {{ border-radius: {r}px; padding: 6px 8px; }}
QListView::item:hover {{ background: {p.hover}; }}
QListView::item:selected {{ background: {p.accent_soft}; color: {p.text}; }}
QListView#nav {{ background: transparent; font-size: {TYPE.section}pt; }}
QListView#nav::item {{ padding: 6px 10px; margin: 0; color: {p.muted}; }}
QListView#nav::item:hover {{ background: {p.hover}; color: {p.text}; }}
QListView#nav::item:selected {{ background: {p.accent_soft}; color: {p.text};
    font-weight: 600; }}
QListView#nav::item:focus {{ border: 1px solid {p.accent}; }}
QListView#chats {{ background: transparent; }}
QMenu {{ background: {p.surface}; color: {p.text}; border: 1px solid {p.border_strong};
    border-radius: {r}px; padding: 4px; }}
QMenu::item {{ padding: 6px 22px 6px 12px; border-radius: {RADIUS.sm}px; }}
QMenu::item:selected {{ background: {p.accent_soft}; }}
QMenu::item:disabled {{ color: {p.faint}; }}
QMenu::separator {{ height: 1px; background: {p.border}; margin: 4px 6px; }}
"""


def _tables(p: Palette, _images) -> str:
    return f"""
QTableView {{ background: {p.surface}; alternate-background-color: {p.surface};
    color: {p.text}; border: 1px solid {p.border}; border-radius: {RADIUS.md}px;
    gridline-color: transparent; selection-background-color: {p.accent_soft};
    selection-color: {p.text}; outline: 0; }}
QTableView::item {{ padding: 0 8px; border-bottom: 1px solid {p.border}; }}
QTableView::item:hover {{ background: {p.hover}; }}
QTableView::item:selected {{ background: {p.accent_soft}; color: {p.text}; }}
QTableView:focus {{ border: 1px solid {p.accent}; }}
QHeaderView {{ background: transparent; }}
QHeaderView::section {{ background: {p.surface}; color: {p.muted}; border: none;
    border-bottom: 1px solid {p.border}; padding: 6px 8px; font-weight: 600;
    font-size: {TYPE.small}pt; }}
QHeaderView::section:hover {{ color: {p.text}; }}
QHeaderView::down-arrow, QHeaderView::up-arrow {{ width: 10px; height: 10px; }}
QTableCornerButton::section {{ background: {p.surface}; border: none; }}
"""


def _chrome(p: Palette, _images) -> str:
    return f"""
QTabWidget::pane {{ border: none; border-top: 1px solid {p.border}; top: -1px; }}
QTabBar::tab {{ background: transparent; color: {p.muted}; padding: 7px 12px;
    border: none; border-bottom: 2px solid transparent; }}
QTabBar::tab:hover {{ color: {p.text}; }}
QTabBar::tab:selected {{ color: {p.text}; border-bottom: 2px solid {p.accent}; }}
QTabBar::tab:focus {{ color: {p.accent}; }}
QStatusBar {{ background: {p.window}; color: {p.muted}; border-top: 1px solid {p.border}; }}
QStatusBar::item {{ border: none; }}
QFrame#card {{ background: {p.surface}; border: 1px solid {p.border};
    border-radius: {RADIUS.lg}px; }}
QFrame#card[chosen="true"] {{ border: 2px solid {p.accent}; }}
QScrollArea#card > QWidget#qt_scrollarea_viewport, QWidget#foundList {{
    background: transparent; }}
QFrame#banner {{ border-radius: {RADIUS.md}px; border: 1px solid {p.border}; }}
QFrame#banner[tone="info"] {{ background: {p.info_soft}; border-color: {p.info_soft}; }}
QFrame#banner[tone="success"] {{ background: {p.success_soft}; border-color: {p.success_soft}; }}
QFrame#banner[tone="warning"] {{ background: {p.warning_soft}; border-color: {p.warning_soft}; }}
QFrame#banner[tone="danger"] {{ background: {p.danger_soft}; border-color: {p.danger_soft}; }}
QFrame#banner QLabel, QFrame#noticeLine QLabel {{ background: transparent; }}
QFrame#noticeLine QLabel#bannerText {{ color: {p.muted}; font-size: {TYPE.small}pt; }}
QFrame#banner QLabel#bannerTitle {{ font-weight: 600; }}
QFrame#banner[shape="column"] QLabel#bannerText {{ font-size: {TYPE.small}pt; }}
QFrame#drawer {{ background: {p.surface}; border: 1px solid {p.border_strong};
    border-radius: {RADIUS.lg}px; }}
QFrame#banner[tone="danger"] QLabel#bannerText {{ color: {p.danger}; }}
QFrame#banner[tone="warning"] QLabel#bannerText {{ color: {p.text}; }}
QLabel#badge {{ border-radius: 9px; padding: 1px 8px; font-size: {TYPE.small}pt;
    font-weight: 600; }}
QLabel#badge[tone="success"] {{ color: {p.success}; background: {p.success_soft}; }}
QLabel#badge[tone="warning"] {{ color: {p.warning}; background: {p.warning_soft}; }}
QLabel#badge[tone="danger"] {{ color: {p.danger}; background: {p.danger_soft}; }}
QLabel#badge[tone="info"] {{ color: {p.info}; background: {p.info_soft}; }}
QLabel#badge[tone="neutral"] {{ color: {p.muted}; background: {p.surface_alt}; }}
QLabel#badge[tone="accent"] {{ color: {p.link}; background: {p.accent_soft}; }}
QFrame#rule {{ background: {p.border}; max-height: 1px; border: none; }}
QGroupBox {{ border: 1px solid {p.border}; border-radius: {RADIUS.lg}px; margin-top: 14px;
    padding: {SPACE.md}px; padding-top: {SPACE.lg}px; background: {p.surface}; }}
QGroupBox::title {{ subcontrol-origin: margin; left: {SPACE.md}px; padding: 0 4px;
    color: {p.text}; font-weight: 600; }}
"""


def _labels(p: Palette, _images) -> str:
    return f"""
QLabel {{ color: {p.text}; }}
QLabel#pageTitle {{ font-size: {TYPE.title}pt; font-weight: 700; }}
QLabel#sectionTitle {{ font-size: {TYPE.section}pt; font-weight: 600; }}
QLabel#rowTitle {{ font-weight: 600; }}
QLabel#muted, QLabel#caption {{ color: {p.muted}; }}
QLabel#caption {{ font-size: {TYPE.small}pt; }}
QLabel#problem {{ color: {p.danger}; }}
QLabel#empty {{ color: {p.muted}; font-size: {TYPE.section}pt; }}
"""
