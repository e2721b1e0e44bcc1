"""``localllm transcribe``: speech in audio files to text, subtitles or JSON, on the daemon's
Whisper models (``/v1/audio/transcriptions``).

Plain text is streamed as the model writes it, a segment at a time; subtitles and JSON come
whole at the end. While a file is read, a terminal's stderr shows how far it has got (``0:42 of
2:05, 34%``) unless the text itself is scrolling by on the same terminal; anywhere else a line
says what is being read. Several files are read one after another.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.parsing import add_command
from localllm.daemon.client.transcripts import Heard, TranscriptEnd

__all__ = ["register"]

DEFAULT_MODEL = "whisper:base"
# the command's formats, and what the API calls each
_FORMATS = {"txt": "text", "srt": "srt", "vtt": "vtt", "json": "verbose_json"}


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands,
        "transcribe",
        _transcribe,
        summary="write down what audio files say",
        description=f"""
            Transcribe audio files (wav, mp3, m4a, ogg, webm, flac: anything FFmpeg reads)
            with a Whisper model of the store ({DEFAULT_MODEL} unless --model names another;
            `localllm pull {DEFAULT_MODEL}` first). Text is printed as it is heard;
            --format srt or vtt writes subtitles, json the segments and every word with its
            times; on a terminal a line shows how far each file has been read. --translate
            writes speech of any language in English.
            """,
        examples=[
            "localllm transcribe meeting.m4a",
            "localllm transcribe talk.mp3 --format srt > talk.srt",
            "localllm transcribe interview.ogg --language de --translate",
        ],
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="audio files")
    parser.add_argument("--model", "-m", default=DEFAULT_MODEL, help="a transcription model")
    parser.add_argument("--language", help="the speech's language (en, de...): else detected")
    parser.add_argument("--translate", action="store_true", help="write it in English")
    parser.add_argument("--format", choices=list(_FORMATS), default="txt", help="what to print")


def _transcribe(context: Context, args: argparse.Namespace) -> int:
    for path in args.files:
        if not path.is_file():
            raise CliError(f"{path}: no such file")
    client = context.client()
    language = None if args.translate else args.language
    streaming = args.format == "txt"
    for path in args.files:
        if len(args.files) > 1:
            context.note(f"== {path.name}")
        progress = _Progress(context, path.name, shown=not (streaming and context.stdout_is_tty()))
        events = client.transcription(
            path, args.model, language, args.translate, _FORMATS[args.format]
        )
        for event in events:
            if isinstance(event, TranscriptEnd):
                progress.finish()
                context.out.write("\n" if streaming else event.document)
                context.out.flush()
                continue
            progress.heard(event)
            if streaming:
                context.out.write(event.text)
                context.out.flush()
    return 0


class _Progress:
    """How far a file has been read, redrawn in place on a terminal's stderr; elsewhere (or
    when ``shown`` is False) one line, or nothing for streamed text."""

    def __init__(self, context: Context, name: str, shown: bool):
        self._context, self._name = context, name
        self._live = shown and context.stderr_is_tty()
        if shown and not self._live:
            context.note(f"transcribing {name}...")

    def heard(self, event: Heard) -> None:
        if not self._live:
            return
        where = f"{_clock(event.end)}"
        if event.duration > 0:
            share = min(event.end / event.duration, 1.0)
            where += f" of {_clock(event.duration)} ({share:.0%})"
        self._context.err.write(f"\r\033[Ktranscribing {self._name}: {where}")
        self._context.err.flush()

    def finish(self) -> None:
        if self._live:
            self._context.err.write("\r\033[K")
            self._context.err.flush()


def _clock(seconds: float) -> str:
    """``1:02:05``, ``2:05``: a place in a recording, as players show it."""
    minutes, whole = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{whole:02d}" if hours else f"{minutes}:{whole:02d}"
