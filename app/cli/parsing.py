"""How each command declares itself to argparse: a help line for the command list, a
description, and examples in the epilog, so ``localllm COMMAND --help`` is complete.

Every command module has a ``register(commands)`` that calls :func:`add_command` and sets
``handler``: a function ``(context, args) -> exit status``.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["Handler", "add_command", "add_json_flag", "dump_json"]

Handler = Callable[[Any, argparse.Namespace], int]


def add_command(
    commands: argparse._SubParsersAction,
    name: str,
    handler: Handler,
    *,
    summary: str,
    description: str,
    examples: Sequence[str] = (),
    aliases: Sequence[str] = (),
    add_help: bool = True,
) -> argparse.ArgumentParser:
    epilog = None
    if examples:
        epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser = commands.add_parser(
        name,
        aliases=list(aliases),
        help=summary,
        description=textwrap.dedent(description).strip(),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=add_help,
    )
    parser.set_defaults(handler=handler)
    return parser


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the daemon's own fields) for scripts"
    )


def dump_json(value: object) -> str:
    """Indented JSON; ``daemon.api`` models are written as the daemon sent them."""
    import json

    return json.dumps(value, indent=2, ensure_ascii=False, default=_plain)


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return str(value)
