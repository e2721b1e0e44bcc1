"""The file dialogs, opening where the user last picked something (else in their home folder),
never in whatever folder the app was started from.

Qt's static dialogs start in the working folder when given none. The folder of the last pick
is kept in ``QSettings`` (the application's: the name ``open_window`` gives it), so the next
dialog, in this run or the next, starts there; one that has gone since falls back to home.
Each function answers as the ``QFileDialog`` function it stands for does.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QWidget

__all__ = [
    "LAST_FOLDER_KEY",
    "existing_directory",
    "open_file_name",
    "open_file_names",
    "remember_folder",
    "save_file_name",
    "start_folder",
]

LAST_FOLDER_KEY = "dialogs/last_folder"


def start_folder(settings: QSettings | None = None) -> str:
    """The folder a dialog opens in: the last one picked from, if it is still there, else
    home."""
    kept = str((settings or QSettings()).value(LAST_FOLDER_KEY, "") or "")
    return kept if kept and Path(kept).is_dir() else str(Path.home())


def remember_folder(chosen: str, settings: QSettings | None = None) -> None:
    """Keep the folder of ``chosen`` (a file, or a folder itself) for the next dialog."""
    if chosen:
        path = Path(chosen)
        (settings or QSettings()).setValue(
            LAST_FOLDER_KEY, str(path if path.is_dir() else path.parent)
        )


def open_file_name(parent: QWidget | None, caption: str, file_filter: str = "") -> tuple[str, str]:
    """``QFileDialog.getOpenFileName``, started in ``start_folder()``."""
    path, chosen_filter = QFileDialog.getOpenFileName(parent, caption, start_folder(), file_filter)
    remember_folder(path)
    return path, chosen_filter


def open_file_names(
    parent: QWidget | None, caption: str, file_filter: str = ""
) -> tuple[list[str], str]:
    """``QFileDialog.getOpenFileNames``, started in ``start_folder()``."""
    paths, chosen_filter = QFileDialog.getOpenFileNames(
        parent, caption, start_folder(), file_filter
    )
    if paths:
        remember_folder(paths[0])
    return paths, chosen_filter


def existing_directory(parent: QWidget | None, caption: str) -> str:
    """``QFileDialog.getExistingDirectory``, started in ``start_folder()``; the folder chosen
    is remembered itself (the next pick is likely beside it or in it)."""
    folder = QFileDialog.getExistingDirectory(parent, caption, start_folder())
    remember_folder(folder)
    return folder


def save_file_name(
    parent: QWidget | None, caption: str, file_name: str, file_filter: str = ""
) -> tuple[str, str]:
    """``QFileDialog.getSaveFileName`` suggesting ``file_name`` in ``start_folder()`` (a bare
    name alone would put it in the working folder)."""
    suggested = str(Path(start_folder()) / file_name)
    path, chosen_filter = QFileDialog.getSaveFileName(parent, caption, suggested, file_filter)
    remember_folder(path)
    return path, chosen_filter
