"""Tools through MCP: the servers the user configured, their tools, and calling them.

Qt-free (an import contract says so): the GUI drives it from its workers, and it runs the
asyncio MCP SDK on its own event loop thread (``host.py``), never on the caller's thread.
"""
