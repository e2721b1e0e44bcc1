"""Children a test interrupts as Ctrl-C does (SIGINT) must start with SIGINT's default action.

A shell without job control starts background commands with SIGINT ignored (``cmd &`` in a
script, some CI runners), every process under it inherits that, and Python then installs no
KeyboardInterrupt handler: the child would never see the test's Ctrl-C.
"""

from __future__ import annotations

import signal

__all__ = ["default_sigint"]


def default_sigint() -> None:
    """``preexec_fn`` for such a child: SIGINT back to its default before the exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
