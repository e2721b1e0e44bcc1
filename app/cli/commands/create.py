"""``localllm create NAME -f Modelfile``: a model from a GGUF file or from another model.

Files the Modelfile names are hashed and uploaded as blobs first (see
:mod:`localllm.app.cli.modelfile_files`); the daemon then builds the model from the Modelfile text
and those digests, streaming its steps, which are shown like pull progress. A file outside the
Modelfile's folder is uploaded only once the person says yes (or passes ``--yes``): a
Modelfile from elsewhere must not be able to send ``~/.ssh/id_rsa`` off quietly.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.modelfile_files import (
    ReferencedFile,
    check_adapters,
    referenced_files,
    upload_referenced,
)
from localllm.app.cli.parsing import add_command
from localllm.app.cli.progress import ProgressBoard
from localllm.daemon.client import ClientError

__all__ = ["register"]

QUANTS = tuple(
    [
        "q4_0",
        "q4_1",
        "q5_0",
        "q5_1",
        "q8_0",
        "q2_K",
        "q3_K_S",
        "q3_K_M",
        "q3_K_L",
        "q4_K_S",
        "q4_K_M",
        "q5_K_S",
        "q5_K_M",
        "q6_K",
    ]
)


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands,
        "create",
        _create,
        summary="create a model from a Modelfile",
        description="""
            Create a model from a Modelfile. FROM names a model in the store or a local .gguf
            file (paths are relative to the Modelfile); PARAMETER, TEMPLATE, SYSTEM, ADAPTER,
            LICENSE and MESSAGE work as in Ollama. ADAPTER names a LoRA adapter GGUF and an
            optional scale (ADAPTER ./lora.gguf 0.5). Local files are copied into the store once
            (identical files are stored once); a file outside the Modelfile's folder is sent
            only after you confirm it (or with --yes). --quantize converts an F16/F32 model.
            """,
        examples=[
            "localllm create my-assistant -f Modelfile",
            "localllm create tiny-q4 -f ./Modelfile --quantize q4_K_M",
            "",
            "a Modelfile:",
            "  FROM ./Llama-3.2-3B-Instruct-Q4_K_M.gguf",
            "  PARAMETER temperature 0.4",
            "  ADAPTER ./my-lora.gguf 0.8",
            '  SYSTEM """You answer in one short paragraph."""',
        ],
    )
    parser.add_argument("name", metavar="NAME", help="name of the new model")
    parser.add_argument(
        "-f",
        "--file",
        type=Path,
        default=Path("Modelfile"),
        metavar="MODELFILE",
        help="the Modelfile to read (default: ./Modelfile)",
    )
    parser.add_argument(
        "-q",
        "--quantize",
        metavar="TYPE",
        type=_quant,
        help=f"quantize the model, e.g. q4_K_M ({', '.join(QUANTS)})",
    )
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="upload files outside the Modelfile's folder without asking",
    )


def _quant(text: str) -> str:
    for quant in QUANTS:
        if quant.lower() == text.lower():
            return quant
    raise argparse.ArgumentTypeError(
        f"unknown quantization {text!r}; choose from {', '.join(QUANTS)}"
    )


def _create(context: Context, args: argparse.Namespace) -> int:
    path: Path = args.file.expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"no Modelfile at {path} (use -f to name one)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    files = referenced_files(text, path.resolve().parent)
    client = context.client()
    check_adapters(text, files, lambda name: _architecture(client, name))
    if not args.yes:
        _confirm_outside(context, [file for file in files if file.outside])
    board = ProgressBoard(context.err)
    digests = upload_referenced(client, files, board)
    events = client.create(args.name, text, files=digests, quantize=args.quantize)
    try:
        for event in events:
            board.update(event)
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
    board.finish()
    return 0


def _architecture(client, name: str) -> str | None:
    """A store model's architecture, from the daemon (None if it cannot say: create will)."""
    try:
        info = client.show(name)
    except ClientError:
        return None
    architecture = info.model_info.get("general.architecture")
    return architecture if isinstance(architecture, str) and architecture else None


def _confirm_outside(context: Context, outside: list[ReferencedFile]) -> None:
    """Ask before sending each file outside the Modelfile's folder; refuse without a terminal."""
    if not outside:
        return
    if not context.stdin_is_tty():
        named = ", ".join(f"{file.instruction} {file.name}" for file in outside)
        raise CliError(
            f"the Modelfile names files outside its folder ({named}); nothing was uploaded. "
            "Pass --yes to upload them anyway"
        )
    for file in outside:
        context.err.write(
            f"{file.instruction} {file.reference} is outside the Modelfile's folder: "
            f"{file.path.resolve()}\nUpload it to the localllm daemon? [y/N] "
        )
        context.err.flush()
        if context.stdin.readline().strip().lower() not in ("y", "yes"):
            raise CliError(f"{file.name} was not uploaded; nothing was created")
