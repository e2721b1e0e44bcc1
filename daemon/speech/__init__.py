"""Text to speech: Piper voices served by a runner subprocess.

``process.SpeakerProcess`` starts and talks to the runner (``worker``, the only code that
imports Piper and onnxruntime) over the frames of ``frames``, as ``daemon.transcription``
does for Whisper: a crash never takes the daemon down, and unloading frees the memory.
``pool.Speakers`` keeps one runner per voice; ``encoding`` turns the runner's PCM into the
audio formats the API answers in.
"""

__all__: list[str] = []
