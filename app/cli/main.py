"""The ``localllm`` command.

Front ends talk to the daemon only over HTTP, so ``serve`` runs the daemon as its own program
(``python -m daemon serve``) rather than importing it.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="localllm",
        description="Run open models on your own computer.",
    )
    parser.add_argument("--version", action="version", version=f"localllm {version('localllm')}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the daemon in the foreground")
    serve.add_argument("--host", help="address to bind, e.g. 127.0.0.1:11435 (LOCALLLM_HOST)")
    return parser


def _serve(args: argparse.Namespace) -> int:
    argv = [sys.executable, "-m", "daemon", "serve"]
    if args.host:
        argv += ["--host", args.host]
    os.execv(sys.executable, argv)
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
