"""``localllm transcribe``: speech in audio files to text, subtitles or JSON, on the daemon's
Whisper models (``/v1/audio/transcriptions``).

Plain text is streamed as the model writes it, a segment at a time, so a long recording shows
its progress as it goes; subtitles and JSON come whole, after a line on stderr that says what
is being read. Several files are read one after another.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.parsing import add_command

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
            times. --translate writes speech of any language in English.
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
    for path in args.files:
        if len(args.files) > 1:
            context.note(f"== {path.name}")
        if args.format == "txt":
            parts = client.transcribe_text(path, args.model, language, args.translate)
            for part in parts:
                context.out.write(part)
                context.out.flush()
            context.print()
            continue
        context.note(f"transcribing {path.name}...")
        answer = client.transcribe(
            path, args.model, language, args.translate, _FORMATS[args.format]
        )
        context.print(answer.rstrip("\n"))
    return 0
