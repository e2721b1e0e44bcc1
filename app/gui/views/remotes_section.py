"""The Server page's Remotes section: engines elsewhere whose models the daemon serves as its
own, with their health (and why, when unreachable), latency, requests in flight and models;
Add opens a dialog, Remove asks first. All calls go through ``RemotesService`` (workers)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from localllm.app.gui.services.remotes import RemotesService
from localllm.app.gui.views.plain_text import confirm, plain_label
from localllm.app.gui.views.record_table import selected_record, table_view
from localllm.app.gui.views.remote_dialog import RemoteDialog

__all__ = ["RemotesSection"]


class RemotesSection(QWidget):
    def __init__(self, remotes: RemotesService, parent=None):
        super().__init__(parent)
        self.remotes = remotes
        self.table = table_view(remotes.table, self)
        self.add = QPushButton("Add…")
        self.remove = QPushButton("Remove…")
        self.remove.setEnabled(False)
        self.message = plain_label(objectName="muted", wordWrap=True)
        self.dialog: RemoteDialog | None = None
        self.add.setToolTip("Serve the models of a vLLM, SGLang, llama-server or Ollama engine")
        self.add.clicked.connect(self.open_add_dialog)
        self.remove.clicked.connect(self._remove)
        self.table.selectionModel().selectionChanged.connect(
            lambda *_: self.remove.setEnabled(selected_record(self.table) is not None)
        )
        remotes.error.connect(self.message.setText)
        remotes.table.modelReset.connect(lambda: self.remove.setEnabled(False))
        title = QHBoxLayout()
        title.addWidget(QLabel("<b>Remotes</b>"))
        naming = QLabel("other engines' models, named NAME/&lt;model id&gt;")
        naming.setObjectName("muted")
        title.addWidget(naming, 1)
        title.addWidget(self.add)
        title.addWidget(self.remove)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(title)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.message)

    def open_add_dialog(self) -> RemoteDialog:
        """Open the Add dialog (not modal: the answer comes from a worker while it is open)."""
        self.message.clear()
        self.dialog = RemoteDialog(self.remotes, self)
        self.dialog.show()
        return self.dialog

    def _remove(self) -> None:
        remote = selected_record(self.table)
        if remote is None:
            return
        question = (
            f"Remove the remote {remote.name}? Its models leave the model list and its stored "
            "API key is forgotten; the engine itself is not touched."
        )
        if confirm(self, "Remove remote", question):
            self.message.clear()
            self.remotes.remove(remote.name)
