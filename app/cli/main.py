"""The ``localllm`` command: parse the arguments, build the settings once, run one command.

This is the CLI's only entry point and the only place it reads the environment (through
``Settings.from_env``). Whatever goes wrong comes out as one ``Error: ...`` line on stderr and
a non-zero status (130 after Ctrl-C), never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from localllm.app.cli.commands import COMMAND_MODULES
from localllm.app.cli.context import Context
from localllm.app.cli.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, CliError, error_lines
from localllm.daemon.client import ClientError
from localllm.daemon.settings import Settings, environment_help

__all__ = ["build_parser", "main"]

DESCRIPTION = """\
Run open models on your own computer.

Commands that need the daemon start it in the background when it is not running."""

EPILOG = """\
examples:
  localllm run qwen2.5:0.5b                 chat in the terminal (pulls the model first)
  localllm run qwen2.5:0.5b "Hello there"   one answer, then exit
  localllm pull llama3.2                    download a model (Ctrl-C pauses)
  localllm list                             the models you have
  localllm ps                               the models loaded in memory
  localllm COMMAND --help                   everything about one command"""


class _TopHelp(argparse.RawDescriptionHelpFormatter):
    """Room for ``list (ls)`` so every command's summary starts in one column."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=26, width=100)
        self._action_max_length = 16  # argparse leaves aliases out when it measures


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="localllm",
        description=DESCRIPTION,
        epilog=f"{EPILOG}\n\n{environment_help()}",
        formatter_class=_TopHelp,
    )
    parser.add_argument("--version", action="version", version=f"localllm {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def _version() -> str:
    try:
        return version("localllm")
    except PackageNotFoundError:
        return "(not installed)"


def main(
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    client_factory: Callable[[Settings], Any] | None = None,
) -> int:
    """Run one command; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "passes_through", False):
        args.extra = extra  # `localllm app ...`: the options belong to the app
    elif unknown := _words_after_options(args, extra):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = Settings.from_env(env)  # None: this process's environment
    except ValueError as error:
        return _fail(error, EXIT_USAGE)
    context = Context(settings, client_factory=client_factory)
    try:
        return args.handler(context, args)
    except KeyboardInterrupt:
        context.err.write("\n")
        return EXIT_INTERRUPTED
    except CliError as error:
        return _fail(error, error.exit_code)
    except ClientError as error:
        return _fail(error, EXIT_ERROR)
    except BrokenPipeError:  # `localllm list | head`: the reader left, nothing to report
        _silence_stdout()
        return EXIT_ERROR
    except OSError as error:
        return _fail(error, EXIT_ERROR)
    except Exception as error:  # a bug: still one line, unless asked for the traceback
        if settings.debug:
            raise
        message = f"unexpected {type(error).__name__}: {error} (LOCALLLM_DEBUG=1 shows where)"
        return _fail(CliError(message), EXIT_ERROR)
    finally:
        context.close()


def _words_after_options(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """argparse fills a trailing ``nargs="*"`` positional before the first option and leaves
    the words after it over (``run MODEL --think "Why?"``); a command that names that
    positional in ``trailing_words`` gets them back, in order. Returns what is still unknown."""
    name = getattr(args, "trailing_words", None)
    if name is None:
        return extra
    words = [word for word in extra if not word.startswith("-")]
    setattr(args, name, [*getattr(args, name), *words])
    return [word for word in extra if word.startswith("-")]


def _fail(error: BaseException, status: int) -> int:
    lines = error_lines(error)
    if isinstance(error, OSError) and error.strerror:  # no errno noise, but the file name
        named = f": {error.filename}" if error.filename else ""
        lines = [f"Error: {error.strerror}{named}"]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    return status


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at devnull so Python's exit flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
