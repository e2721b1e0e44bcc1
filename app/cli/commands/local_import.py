"""``localllm import PATH...`` and ``localllm import --scan``: models already on this computer.

A PATH is a GGUF file, a Whisper model folder in CTranslate2 form (``faster-whisper-base``:
``model.bin``, ``config.json``, ``tokenizer.json``, a vocabulary), or a Piper voice: its
``.onnx`` (its ``.onnx.json`` beside it), both files, or their folder. A file on the store's file
system is hard-linked (or reflinked) into the store, so it takes no
second copy of disk; anything else is copied, and the size is said first. ``--scan`` lists
what the daemon found in the Hugging Face cache, LM Studio, Ollama and LOCALLLM_IMPORT_DIRS,
says for each whether it would be linked or copied, and adds them once the person says yes
(or passes ``--yes``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.formatting import format_size, table
from localllm.app.cli.parsing import add_command
from localllm.app.cli.progress import ProgressBoard
from localllm.daemon.api import ProgressResponse
from localllm.daemon.api.local_models import ImportMode, ImportProgress, LocalModelOut
from localllm.daemon.client import ClientError

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands,
        "import",
        _import,
        summary="add models already on this computer (linked, not copied, where possible)",
        description="""
            Add GGUF files you already have (from Hugging Face, LM Studio, Ollama or anywhere)
            to the store, a Whisper speech-to-text model folder in CTranslate2 form (as
            faster-whisper uses: model.bin, config.json, tokenizer.json, vocabulary.txt), or a
            Piper voice for `localllm say` (its .onnx with its .onnx.json beside it). On
            the store's file system a file is hard-linked: no second copy, no extra disk.
            Elsewhere it is copied (the size is shown first). Either way it is hashed and
            checked. --scan lists the models found in the Hugging Face cache,
            LM Studio's and Ollama's folders and LOCALLLM_IMPORT_DIRS and offers to add them.
            """,
        examples=[
            "localllm import ~/Downloads/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf",
            "localllm import ./model.gguf --name my-model --copy",
            "localllm import ~/models/faster-whisper-base whisper:base",
            "localllm import en_US-joe-medium.onnx en_US-joe-medium.onnx.json voice:joe",
            "localllm import --scan",
            "localllm import --scan --yes",
        ],
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="GGUF files, Whisper model folders or Piper voices to add; PATH NAME adds one "
        "PATH as NAME",
    )
    parser.add_argument("-n", "--name", help="the model's name (one PATH only)")
    parser.add_argument(
        "--copy", action="store_true", help="copy the files instead of linking them"
    )
    parser.add_argument(
        "--scan", action="store_true", help="list models found on this computer and offer them"
    )
    parser.add_argument("-y", "--yes", action="store_true", help="with --scan: add all, unasked")


def _import(context: Context, args: argparse.Namespace) -> int:
    mode: ImportMode = "copy" if args.copy else "auto"
    if args.scan:
        if args.paths or args.name:
            raise CliError("--scan takes no PATH or --name: it names what it finds")
        return _scan(context, mode, args.yes)
    if not args.paths:
        raise CliError(
            "name one or more .gguf files or Whisper model folders, or use --scan to find them"
        )
    args.paths, args.name = _name_given_last(_one_voice(args.paths), args.name)
    if args.name and len(args.paths) > 1:
        raise CliError("--name names one model: give one PATH with it")
    for path in args.paths:
        _add(context, path.expanduser().absolute(), args.name, mode)
    return 0


def _name_given_last(paths: list[Path], name: str | None) -> tuple[list[Path], str | None]:
    """``import PATH NAME``: two arguments, the second no file or folder here, is a path
    and the name it is added as (as ``--name``)."""
    if name is None and len(paths) == 2 and not paths[1].expanduser().exists():
        return paths[:1], str(paths[1])
    return paths, name


def _one_voice(paths: list[Path]) -> list[Path]:
    """A voice's two files named together (``x.onnx x.onnx.json``) are one PATH: the first."""
    return [
        path
        for path in paths
        if not (path.name.endswith(".onnx.json") and path.with_suffix("") in paths)
    ]


def _add(context: Context, path: Path | str, name: str | None, mode: ImportMode) -> bool:
    board = ProgressBoard(context.err)
    events = context.client().import_file(path, name=name, mode=mode)
    try:
        for event in events:
            _show(context, board, event)
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
        board.finish()
    return True


def _show(context: Context, board: ProgressBoard, event: ImportProgress) -> None:
    if event.status == "added":
        size = format_size(event.total)
        how = {
            "linked": f"linked {event.file} ({size}, hard link: no copy)",
            "cloned": f"cloned {event.file} ({size}, copy-on-write: no copy)",
            "present": f"{event.file} ({size}) was already in the store",
        }.get(event.placement or "", f"copied {event.file} ({size})")
        context.note(how)
    elif event.status == "success":
        copied = f", {format_size(event.copied_bytes)} copied" if event.copied_bytes else ""
        context.print(f"added {event.model}{copied}")
    elif event.file is None and event.status.startswith("copying"):
        context.note(f"{event.status}: {format_size(event.total)} will be copied into the store")
    else:
        board.update(
            ProgressResponse(status=event.status, total=event.total, completed=event.completed)
        )


def _scan(context: Context, mode: ImportMode, yes: bool) -> int:
    found = context.client().local_models()
    if not found.models:
        context.print("no GGUF models found (set LOCALLLM_IMPORT_DIRS to add folders to look in)")
        return 0
    context.print(
        table(
            ["NAME", "FROM", "SIZE", "QUANT", "ADDED AS", "PATH"], list(_rows(found.models, mode))
        )
    )
    if found.truncated:
        context.note("the scan stopped early (too many files or folders); some may be missing")
    new = [m for m in found.models if not m.in_store]
    if not new:
        context.print("every model found is already in the store")
        return 0
    copied = sum(m.size for m in new if mode == "copy" or not m.linkable)
    summary = (
        f"{len(new)} model(s), {format_size(copied)} to copy"
        if copied
        else f"{len(new)} model(s), no copying"
    )
    if not yes and not _confirm(context, f"Add {summary}? [y/N] "):
        context.note("nothing was added (pass --yes to add them all)")
        return 0
    failed = 0
    for model in new:
        try:
            _add(context, model.path, model.name, mode)
        except ClientError as error:  # one bad file (a name taken) does not stop the rest
            context.note(f"{model.name}: {error}")
            failed += 1
    return 1 if failed else 0


def _rows(models: list[LocalModelOut], mode: ImportMode) -> Iterator[list[str]]:
    for m in models:
        if m.in_store:
            how = "already added"
        elif mode == "copy" or not m.linkable:
            how = "copy"
        else:
            how = "link (no copy)"
        yield [m.name, m.source, format_size(m.size), m.quantization, how, _home(m.path)]


def _home(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home + "/") else path


def _confirm(context: Context, question: str) -> bool:
    if not context.stdin_is_tty():
        return False
    context.err.write(question)
    context.err.flush()
    return context.stdin.readline().strip().lower() in ("y", "yes")
