"""The speech runner: the only code in localllm that imports Piper (and its onnxruntime).

Started by :class:`localllm.daemon.speech.process.SpeakerProcess` as ``python -m
localllm.daemon.speech.worker``; it reads a spec as its first frame on stdin, loads the voice,
then serves the frames of :mod:`localllm.daemon.speech.frames`. Logs go to stderr. Importing
this package imports nothing heavy; ``__main__`` and ``voice`` do.
"""

__all__: list[str] = []
