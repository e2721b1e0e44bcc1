"""Adding a remote: name, URLs (replicas of one engine), the API it speaks, and its API key,
typed here (the daemon keeps it in the keyring) or named as an environment variable.

The fields are checked in ``app.gui.state.remotes.add_request`` before anything is sent; the
daemon's own refusal (a name taken, a bad URL) shows in the dialog, which stays open to fix it.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
)

from localllm.app.gui.services.remotes import RemotesService
from localllm.app.gui.state.remotes import KEY_IN_ENV, KEY_IN_KEYRING, NO_KEY, add_request
from localllm.app.gui.views.plain_text import plain_label

__all__ = ["RemoteDialog"]

_KEY_PLACEHOLDERS = {
    NO_KEY: "",
    KEY_IN_KEYRING: "the API key (kept in the system keyring)",
    KEY_IN_ENV: "an environment variable of the daemon's, e.g. VLLM_API_KEY",
}


class RemoteDialog(QDialog):
    def __init__(self, remotes: RemotesService, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Add a remote")
        self.remotes = remotes
        self.name = QLineEdit(placeholderText="gpu-box")
        self.urls = QLineEdit(placeholderText="http://gpu-box:8000 http://gpu-box-2:8000")
        self.kind = QComboBox()
        self.kind.addItem("OpenAI-compatible (vLLM, SGLang, TGI, llama-server…)", "openai")
        self.kind.addItem("Ollama", "ollama")
        self.key_sources = QButtonGroup(self)
        key_row = QHBoxLayout()
        for source, text in ((NO_KEY, "None"), (KEY_IN_KEYRING, "Key"), (KEY_IN_ENV, "Env var")):
            button = QRadioButton(text)
            button.setObjectName(f"key-{source}")
            button.setChecked(source == NO_KEY)
            button.toggled.connect(lambda _on: self._key_source_changed())
            self.key_sources.addButton(button)
            key_row.addWidget(button)
        self.key = QLineEdit()
        self.key.setEnabled(False)
        self.problem = plain_label(objectName="error", wordWrap=True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Add")
        self.buttons.accepted.connect(self.submit)
        self.buttons.rejected.connect(self.reject)
        remotes.added.connect(self._added)
        remotes.add_failed.connect(self._failed)
        self.finished.connect(self._detach)
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("URLs", self.urls)
        form.addRow("API", self.kind)
        form.addRow("API key", key_row)
        form.addRow("", self.key)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)

    def key_source(self) -> str:
        checked = self.key_sources.checkedButton()
        return checked.objectName().removeprefix("key-") if checked else NO_KEY

    def _key_source_changed(self) -> None:
        source = self.key_source()
        self.key.setEnabled(source != NO_KEY)
        self.key.setPlaceholderText(_KEY_PLACEHOLDERS[source])
        echo = (
            QLineEdit.EchoMode.Password if source == KEY_IN_KEYRING else QLineEdit.EchoMode.Normal
        )
        self.key.setEchoMode(echo)

    def submit(self) -> None:
        """Check the fields, then ask the daemon; the dialog closes once it has added it."""
        try:
            request = add_request(
                self.name.text(), self.urls.text(), self.kind.currentData(),
                self.key_source(), self.key.text(),
            )  # fmt: skip
        except ValueError as error:
            self.problem.setText(str(error))
            return
        self.problem.setText("Adding…")
        self.buttons.setEnabled(False)
        self.remotes.add(request)

    def _added(self, remote) -> None:
        if remote.name == self.name.text().strip():
            self.key.clear()
            self.accept()

    def _detach(self, _result: int) -> None:
        """A closed dialog hears no more answers (a later Add opens a new one)."""
        self.remotes.added.disconnect(self._added)
        self.remotes.add_failed.disconnect(self._failed)
        self.deleteLater()

    def _failed(self, problem: str) -> None:
        self.buttons.setEnabled(True)
        self.problem.setText(problem)
