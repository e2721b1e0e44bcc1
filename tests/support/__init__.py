"""What the tests share: the real daemon and runner harnesses, the local hub, fakes checked
against the real types, and one way to wait for something (``polling.wait_for``)."""
