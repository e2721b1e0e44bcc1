"""Commands that hand over to another program: ``serve`` (the daemon) and ``app`` (the GUI).

``serve`` replaces this process with ``python -m localllm.daemon serve`` rather than importing the
server, so the CLI never loads FastAPI or the scheduler; the daemon's own errors (such as
refusing a network address without an API key) reach the user unchanged. ``app`` imports the
desktop app only when asked, so no other command pays for loading Qt.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.parsing import add_command
from localllm.app.gui.system_libraries import qt_platform_problem
from localllm.daemon.settings import environment_help

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    serve = add_command(
        commands,
        "serve",
        _serve,
        summary="run the daemon in the foreground",
        description="""
            Run the daemon (the OpenAI- and Ollama-compatible API on 127.0.0.1:11435) in the
            foreground, logging to the terminal. Other commands start it in the background by
            themselves when it is not running; use this to watch it or to serve your network.
            Listening beyond this computer needs an API key (see `localllm key`).
            """,
        examples=[
            "localllm serve",
            "localllm serve --host 127.0.0.1:8080",
            "LOCALLLM_API_KEY=$(localllm key -q) localllm serve --host 0.0.0.0:11435",
        ],
    )
    serve.epilog = f"{serve.epilog}\n\n{environment_help()}"  # the settings it reads
    serve.add_argument(
        "--host", metavar="HOST[:PORT]", help="address to listen on (default: LOCALLLM_HOST)"
    )
    serve.add_argument(
        "--log-level", choices=("debug", "info", "warning"), help="how much the daemon logs"
    )

    app = add_command(
        commands,
        "app",
        _app,
        summary="open the desktop app",
        description="""
            Open the localllm desktop app. Options after `app` go to the app: --host, --data-dir,
            --no-start (never start the daemon), --theme system|light|dark.
            """,
        examples=["localllm app", "localllm app --theme dark", "localllm app --help"],
        add_help=False,
    )
    app.set_defaults(passes_through=True)


def _serve(context: Context, args: argparse.Namespace) -> int:
    argv = [sys.executable, "-m", "localllm.daemon", "serve"]
    if args.host:
        argv += ["--host", args.host]
    if args.log_level:
        argv += ["--log-level", args.log_level]
    context.out.flush()
    context.err.flush()
    if os.name == "nt":  # no exec on Windows: wait for the daemon and pass on its status
        return subprocess.call(argv)
    os.execv(sys.executable, argv)
    return 0  # not reached


def _app(context: Context, args: argparse.Namespace) -> int:
    """The app reads the same ``LOCALLLM_*`` settings itself (and the port chosen in it)."""
    problem = qt_platform_problem(os.environ)  # before Qt loads: it would abort instead
    if problem is not None:
        raise CliError(problem)
    try:
        from localllm.app.gui.main import run_app
    except ImportError as error:
        raise CliError(f"the desktop app cannot start: {error} (is PySide6 installed?)") from None
    return run_app(list(args.extra))
