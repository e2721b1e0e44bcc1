"""``localllm say``: text spoken by a voice of the store (``/v1/audio/speech``), written as an
audio file.

Where it goes: ``-o FILE`` (its suffix picks the format: .wav, .mp3, .flac, .ogg or .opus,
.aac, .pcm); with no ``-o``, into a pipe as WAV when stdout is one (``localllm say hi | aplay``),
else into ``speech.wav`` here, as the note on stderr says. The daemon streams a WAV with its
sizes unknown; the whole answer is here before it is written, so the file's header is made
to say them.
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path
from typing import BinaryIO

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.parsing import add_command

__all__ = ["register"]

DEFAULT_VOICE = "voice:joe"
_DEFAULT_FILE = "speech.wav"
_FORMATS = {
    ".wav": "wav",
    ".mp3": "mp3",
    ".flac": "flac",
    ".ogg": "opus",
    ".opus": "opus",
    ".aac": "aac",
    ".pcm": "pcm",
    ".raw": "pcm",
}
_WAV_HEADER = 44  # bytes of the 16-bit PCM WAV header the daemon writes


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands,
        "say",
        _say,
        summary="speak text with a voice, into an audio file",
        description=f"""
            Speak TEXT (or what stdin holds, with no TEXT) with a Piper voice of the store
            ({DEFAULT_VOICE} unless --voice names another; `localllm pull {DEFAULT_VOICE}`
            fetches it, `localllm import VOICE.onnx NAME` adds one you have). -o names the
            file, its suffix the format (.wav, .mp3, .flac, .ogg, .aac, .pcm); without -o
            the WAV goes to stdout when that is a pipe, else to {_DEFAULT_FILE} here.
            """,
        examples=[
            'localllm say "Hello there"',
            'localllm say "The build is green" -o done.mp3',
            "cat notes.txt | localllm say --voice voice:amy --speed 1.2 > notes.wav",
            'localllm say "Hello" | aplay',
        ],
    )
    parser.add_argument("text", nargs="*", metavar="TEXT", help="what to say (else stdin)")
    parser.add_argument("--voice", default=DEFAULT_VOICE, help="a voice of the store")
    parser.add_argument(
        "--output", "-o", type=Path, metavar="FILE", help="where to write it (-: stdout)"
    )
    parser.add_argument(
        "--speed", type=float, default=1.0, help="0.25 (slow) to 4 (fast); 1 as the voice"
    )


def _say(context: Context, args: argparse.Namespace) -> int:
    text = " ".join(args.text) if args.text else _stdin_text(context)
    if not text.strip():
        raise CliError("nothing to say: give TEXT, or pipe text into localllm say")
    target = None if args.output == Path("-") else args.output
    to_pipe = target is None and (args.output is not None or not context.stdout_is_tty())
    if target is None and not to_pipe:
        target = Path(_DEFAULT_FILE)
    form = _FORMATS.get(target.suffix.lower(), "wav") if target is not None else "wav"
    audio = context.client().speak(text, args.voice, form, args.speed)
    if form == "wav":
        audio = _sized_wav(audio)
    if target is None:
        _write(_binary(context), audio)
        return 0
    target.write_bytes(audio)
    context.note(f"wrote {target} ({_describe(audio, form)})")
    return 0


def _stdin_text(context: Context) -> str:
    if context.stdin_is_tty():
        raise CliError("nothing to say: give TEXT, or pipe text into localllm say")
    return context.stdin.read()


def _binary(context: Context) -> BinaryIO:
    """Standard output's bytes (the text stream's buffer)."""
    buffer = getattr(context.out, "buffer", None)
    if buffer is None:
        raise CliError("standard output takes no bytes here: name a file with -o")
    context.out.flush()
    return buffer


def _write(out: BinaryIO, audio: bytes) -> None:
    out.write(audio)
    out.flush()


def _sized_wav(audio: bytes) -> bytes:
    """The WAV with its real sizes in the header, where the daemon's said "unknown"."""
    if len(audio) < _WAV_HEADER or audio[:4] != b"RIFF" or audio[36:40] != b"data":
        return audio
    riff = struct.pack("<I", len(audio) - 8)
    data = struct.pack("<I", len(audio) - _WAV_HEADER)
    return audio[:4] + riff + audio[8:40] + data + audio[_WAV_HEADER:]


def _describe(audio: bytes, form: str) -> str:
    """How long a WAV's speech is; the size of anything else."""
    if form == "wav" and len(audio) >= _WAV_HEADER:
        (rate,) = struct.unpack("<I", audio[24:28])
        seconds = (len(audio) - _WAV_HEADER) / (2 * rate) if rate else 0.0
        return f"{seconds:.1f} s of speech"
    return f"{len(audio):,} bytes of {form}"
