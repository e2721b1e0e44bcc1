"""The transcription runner: the only code in localllm that imports faster-whisper and
CTranslate2.

Started by :class:`localllm.daemon.transcription.process.TranscriberProcess` as ``python -m
localllm.daemon.transcription.worker``; it reads a spec as its first frame on stdin, loads the
model, then serves the frames of :mod:`localllm.daemon.transcription.frames`. Logs go to
stderr. Importing this package imports nothing heavy; ``__main__`` does.
"""

__all__: list[str] = []
