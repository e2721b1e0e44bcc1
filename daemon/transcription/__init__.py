"""Speech to text: Whisper models (CTranslate2 form) served by a runner subprocess.

``process.TranscriberProcess`` starts and talks to the runner (``worker``, the only code that
imports faster-whisper or CTranslate2) over the frames of ``frames``, as
``daemon.runners.process`` does for llama.cpp: a crash or a native abort never takes the
daemon down, and unloading frees the memory.
"""

__all__: list[str] = []
