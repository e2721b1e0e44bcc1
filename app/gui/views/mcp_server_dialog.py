"""Add or edit one MCP server: a command to start (with arguments, a working folder and
environment variables, e.g. a token) or the URL of one already running. The entry is checked
before the dialog closes, and what is wrong is said in the dialog."""

from __future__ import annotations

import shlex

from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from localllm.app.tools.servers import ServerConfig, ServerConfigError

__all__ = ["McpServerDialog"]


class McpServerDialog(QDialog):
    def __init__(self, server: ServerConfig | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Edit MCP server" if server else "Add MCP server")
        self.server: ServerConfig | None = None
        self.name = QLineEdit(placeholderText="files")
        self.as_command = QRadioButton("Start a command (stdio)")
        self.as_url = QRadioButton("Connect to a URL (streamable HTTP)")
        kinds = QButtonGroup(self)
        kinds.addButton(self.as_command)
        kinds.addButton(self.as_url)
        self.command = QLineEdit(placeholderText="npx")
        self.args = QLineEdit(placeholderText="-y @modelcontextprotocol/server-filesystem ~/notes")
        self.cwd = QLineEdit(placeholderText="(the app's folder)")
        self.env = QPlainTextEdit(
            placeholderText="API_TOKEN=…   (one per line; kept in the keyring)"
        )
        self.env.setFixedHeight(70)
        self.url = QLineEdit(placeholderText="http://127.0.0.1:8000/mcp")
        self.enabled = QCheckBox("Offer its tools in chats")
        self.problem = QLabel(wordWrap=True)
        self.problem.setStyleSheet("color:#b42318;")
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow(self.as_command)
        form.addRow("Command", self.command)
        form.addRow("Arguments", self.args)
        form.addRow("Working folder", self.cwd)
        form.addRow("Environment", self.env)
        form.addRow(self.as_url)
        form.addRow("URL", self.url)
        form.addRow(self.enabled)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self.as_command.toggled.connect(self._kind_changed)
        self._fill(server)

    def _fill(self, server: ServerConfig | None) -> None:
        server = server or ServerConfig("new", command="x")
        self.name.setText("" if server.name == "new" and server.command == "x" else server.name)
        self.command.setText("" if server.command == "x" else server.command)
        self.args.setText(shlex.join(server.args))
        self.cwd.setText(server.cwd)
        self.env.setPlainText("\n".join(f"{k}={v}" for k, v in server.env.items()))
        self.url.setText(server.url)
        self.enabled.setChecked(server.enabled)
        (self.as_url if server.url else self.as_command).setChecked(True)
        self._kind_changed()

    def _kind_changed(self) -> None:
        command = self.as_command.isChecked()
        for field in (self.command, self.args, self.cwd, self.env):
            field.setEnabled(command)
        self.url.setEnabled(not command)

    def entry(self) -> ServerConfig:
        """The server as filled in; ``ServerConfigError`` says what to fix."""
        name = self.name.text().strip()
        if self.as_url.isChecked():
            return ServerConfig(name, url=self.url.text().strip(), enabled=self.enabled.isChecked())
        try:
            args = tuple(shlex.split(self.args.text()))
        except ValueError as exc:
            raise ServerConfigError(f"the arguments cannot be read: {exc}") from None
        env: dict[str, str] = {}
        for line in self.env.toPlainText().splitlines():
            if line.strip():
                key, equals, value = line.strip().partition("=")
                if not equals:
                    raise ServerConfigError(f"write each variable as NAME=value, not {key!r}")
                env[key.strip()] = value
        return ServerConfig(
            name,
            command=self.command.text().strip(),
            args=args,
            env=env,
            cwd=self.cwd.text().strip(),
            enabled=self.enabled.isChecked(),
        )

    def _accept(self) -> None:
        try:
            self.server = self.entry()
        except ServerConfigError as exc:
            self.problem.setText(str(exc))
            return
        self.accept()
