"""The desktop app's Qt-free state: the daemon as frozen values (``records``, ``wire``,
``gateway``), chats, downloads, daemon health and control, what fits this machine.

Nothing here imports PySide6 (an import contract checks it), so it is tested without widgets.
"""
