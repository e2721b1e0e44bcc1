"""The offline notice: Hugging Face cannot be reached, so downloads wait; the models installed
work as usual and a GGUF file can be imported.

It sits in the navigation column, under the pages' entries, where the room is free: the
answer comes a few seconds after launch, and a notice over the pages would push every page
down as it arrived. Dismissed, it stays away for as long as the app is offline, across
launches too (``DISMISSED_KEY`` in ``QSettings``); once the hub answers again the dismissal is
forgotten, so the next time the app is offline it says so again.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSettings

from localllm.app.gui.design.widgets import Banner
from localllm.app.gui.services.hub import OFFLINE_BANNER

__all__ = ["DISMISSED_KEY", "OfflineNotice"]

DISMISSED_KEY = "banners/offline_dismissed"  # QSettings: true while dismissed and offline


class OfflineNotice(Banner):
    def __init__(
        self,
        settings: QSettings,
        icons=None,
        *,
        on_import: Callable[[], None],
        on_retry: Callable[[], None],
        parent=None,
    ):
        super().__init__(icons, tone="warning", shape="column", title="Offline", parent=parent)
        self.settings = settings
        self.retry = self.add_icon_action("refresh", "Try again", on_retry)
        self.add_action("Import GGUF…", on_import)
        self.finish_actions()
        self.dismissed.connect(lambda: self.settings.setValue(DISMISSED_KEY, True))
        if self.settings.value(DISMISSED_KEY, False, type=bool):
            self.keep_dismissed(OFFLINE_BANNER)

    def show_offline(self, offline: bool) -> None:
        """Say it while ``offline`` (unless dismissed); online again, forget the dismissal."""
        if not offline:
            self.settings.remove(DISMISSED_KEY)
            self.forget_dismissed()
        self.show_text(OFFLINE_BANNER if offline else "", "warning")
