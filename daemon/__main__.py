"""``python -m localllm.daemon serve [--host HOST[:PORT]]``: run the daemon in the foreground.

Settings come from the environment (``LOCALLLM_*``) once, here; ``--host`` overrides
``LOCALLLM_HOST``. The log (the daemon's own lines, and one JSON line per request) goes to
``<log dir>/daemon.log`` however the daemon was started (what ``GET /api/logs`` and the app's
Server page read), which the daemon rotates itself (``server.log_file``). In a terminal it also
goes to stderr. Started in the background (``--log-file-only``, as the launcher does, or with
stderr already that file, as a launchd agent does) it goes only to the file, and so does
anything printed to stdout or stderr once the log is set up: whoever started the daemon has
nothing that grows while it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import sys
from pathlib import Path

import uvicorn

from localllm.daemon.security import AdminTokenStore, ApiKeyStore, is_loopback_address
from localllm.daemon.server import create_app
from localllm.daemon.server.http_protocol import header_timeout_protocol
from localllm.daemon.server.log_file import LOG_NAME, PrivateLogFile
from localllm.daemon.settings import Settings, parse_host
from localllm.model_registry.hf_token import load_hf_token

__all__ = ["main"]

_REQUEST_LOG = "localllm.requests"  # one JSON line per request (``server.metrics``)
_RECORD_CHARS = 64 << 10  # of any other log record: a message quoting a client is cut


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localllm.daemon", description="the localllm daemon"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API in the foreground")
    serve.add_argument("--host", help="HOST[:PORT] to listen on (default: LOCALLLM_HOST)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    serve.add_argument(
        "--log-file-only",
        action="store_true",
        help="log only to the log file, with stdout and stderr (started in the background)",
    )
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        if args.host:
            host, port = parse_host(args.host)
            settings = dataclasses.replace(settings, host=host, port=port)
        settings = _with_api_key(settings)
        token = load_hf_token(settings.hf_token, settings.config_dir)
        settings = dataclasses.replace(settings, hf_token=token)
    except ValueError as error:
        print(f"localllm: {error}", file=sys.stderr)
        return 2
    _make_private_folders(settings)
    _configure_logging(args.log_level, settings, file_only=args.log_file_only)
    app = create_app(settings, admin_token=_admin_token(settings))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=5,
        http=header_timeout_protocol(settings.header_timeout),  # slow clients are cut off
    )
    uvicorn.Server(config).run()
    return 0


def _with_api_key(settings: Settings) -> Settings:
    """Beyond loopback an API key is mandatory: LOCALLLM_API_KEY, else the one `localllm key`
    saved. Without either, refuse to start rather than serve models to the whole network."""
    if settings.api_key or is_loopback_address(settings.host):
        return settings
    stored = ApiKeyStore(settings.config_dir).load()
    if stored is None:
        raise ValueError(
            f"refusing to listen on {settings.host} without an API key: anyone on the network "
            "could use your models. Run `localllm key` to create one (or set LOCALLLM_API_KEY)"
        )
    return dataclasses.replace(settings, api_key=stored)


def _admin_token(settings: Settings) -> str | None:
    """LOCALLLM_ADMIN_TOKEN, else the token in the config folder (made now if there is none),
    which the CLI and the app read to change remotes."""
    if settings.admin_token:
        return settings.admin_token
    try:
        return AdminTokenStore(settings.config_dir).create()
    except OSError as error:
        logging.getLogger("localllm").warning(
            "cannot keep the admin token in the config folder (%s): remotes cannot be changed "
            "unless LOCALLLM_ADMIN_TOKEN is set",
            error.strerror or type(error).__name__,
        )
        return None


def _make_private_folders(settings: Settings) -> None:
    """The data folder (pull list, chats) and the log folder hold what is the user's only:
    made 0700 when new, before anything else creates them with the umask's mode."""
    for folder in (settings.data_dir, settings.log_dir):
        with contextlib.suppress(OSError):  # the writers report it if it cannot be made
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def _configure_logging(level: str, settings: Settings, *, file_only: bool) -> None:
    path = settings.log_dir / LOG_NAME
    file_only = file_only or _is_stderr(path)
    problem = ""
    try:
        log_file = PrivateLogFile(path, settings.log_max_bytes, take_output=file_only)
    except OSError as error:
        log_file, problem = None, error.strerror or type(error).__name__
    handlers: list[logging.Handler] = []
    if log_file is None or not file_only:  # a terminal shows it, or nothing would
        handlers.append(logging.StreamHandler(sys.stderr))
    if log_file is not None:
        handlers.append(log_file)
    for handler in handlers:
        handler.setFormatter(_LogFormat())
    root = logging.getLogger()
    root.handlers[:] = handlers
    root.setLevel(level.upper())
    # httpx logs every request at INFO (and huggingface_hub's httpx2 too): remotes' health
    # checks and hub browsing would fill the log
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    if problem:
        logging.getLogger("localllm").warning(
            "cannot write the log file %s (%s): the log goes to stderr only", LOG_NAME, problem
        )


def _is_stderr(path: Path) -> bool:
    """Whether stderr is the log file already (a launchd agent's, an older launcher's way)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.path.samestat(os.fstat(sys.stderr.fileno()), os.stat(path))
    return False


class _LogFormat(logging.Formatter):
    """The daemon's own lines with time, level and logger, cut to ``_RECORD_CHARS``; request
    lines as their JSON (bounded where they are made, and cut they would be no JSON)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if record.name == _REQUEST_LOG:
            return record.getMessage()
        text = super().format(record)
        if len(text) <= _RECORD_CHARS:
            return text
        return f"{text[:_RECORD_CHARS]}... ({len(text) - _RECORD_CHARS:,} more characters)"


if __name__ == "__main__":
    sys.exit(main())
