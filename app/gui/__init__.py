"""The desktop app (PySide6).

Layers, each importing only the ones above it: ``records``/``gateway`` (the daemon, as frozen
values, through ``daemon.client`` only); Qt-free state (``chat/``, ``downloads``, ``daemon_health``,
``fit``); ``workers`` (blocking work off the UI thread); ``item_models/`` (thin Qt adapters);
``services/`` (state + workers + models per feature); ``views/`` (widgets); ``main`` (start-up).
"""
