"""``localllm remote add|ls|rm``: engines elsewhere (vLLM, SGLang, llama-server, Ollama, another
localllm) whose models the daemon serves next to its own, as ``NAME/<model id>``.

An API key is never taken on the command line, where it would stay in the shell's history:
``--api-key-stdin`` reads it from a pipe, or asks without echoing when run in a terminal, and
the daemon keeps it in the keyring; ``--api-key-env VAR`` names a variable of the daemon's.
"""

from __future__ import annotations

import argparse
import getpass

from localllm.app.cli.context import Context
from localllm.app.cli.errors import EXIT_USAGE, CliError
from localllm.app.cli.formatting import table
from localllm.app.cli.parsing import add_command, add_json_flag, dump_json
from localllm.app.cli.remote_view import remote_rows
from localllm.daemon.api.remotes import RemoteAddRequest
from localllm.daemon.client import RemoteNotFound

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    remote = add_command(
        commands,
        "remote",
        _usage,
        summary="serve models from other engines (vLLM, SGLang, Ollama...) as your own",
        description="""
            Register an engine that runs elsewhere (vLLM, SGLang, TGI, llama-server, LM Studio,
            Ollama, another localllm); its models then appear in `localllm list` and every API
            as NAME/<model id>. Several URLs are replicas of one engine: requests go to the
            least busy healthy one.
            """,
        examples=[
            "localllm remote add gpu http://10.0.0.5:8000 http://10.0.0.6:8000",
            "localllm remote ls -v",
            "localllm remote rm gpu",
        ],
    )
    actions = remote.add_subparsers(dest="remote_command", metavar="ACTION", title="actions")
    add = add_command(
        actions,
        "add",
        _add,
        summary="register a remote engine",
        description="""
            Register an engine under NAME (lowercase letters, digits, '-' and '_'), at one or
            more base URLs. Its models are named NAME/<model id>, or an alias you give.
            """,
        examples=[
            "localllm remote add gpu http://10.0.0.5:8000",
            "localllm remote add gpu http://10.0.0.5:8000 --api-key-env VLLM_API_KEY",
            'echo "$KEY" | localllm remote add gpu https://gpu.example --api-key-stdin',
            "localllm remote add box http://box:11434 --kind ollama --alias llama=llama3.2",
        ],
    )
    add.add_argument("name", metavar="NAME")
    add.add_argument("urls", nargs="+", metavar="URL", help="base URLs (replicas of one engine)")
    key = add.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key-env", metavar="VAR", help="read the key from the daemon's environment"
    )
    key.add_argument(
        "--api-key-stdin",
        action="store_true",
        help="read the key from stdin (asked without echo in a terminal); kept in the keyring",
    )
    add.add_argument("--api-key", dest="key_on_command_line", help=argparse.SUPPRESS)
    add.add_argument(
        "--kind",
        choices=["openai", "ollama"],
        default="openai",
        help="the API the engine speaks (default: openai)",
    )
    add.add_argument(
        "--alias",
        action="append",
        default=[],
        metavar="ALIAS=ID",
        help="also call the remote's model ID by ALIAS (repeatable)",
    )
    add.add_argument("--timeout", type=float, metavar="S", help="seconds a request may take")
    add.add_argument(
        "--max-concurrency", type=int, metavar="N", help="requests at once per replica"
    )

    listing = add_command(
        actions,
        "ls",
        _list,
        aliases=["list"],
        summary="list remotes: health, latency, models, requests in flight",
        description="""
            List the remotes with their health (and why when unhealthy), the fastest replica's
            latency, how many models they serve and the requests in flight. -v adds a line per
            replica and the models' names.
            """,
        examples=["localllm remote ls", "localllm remote ls -v", "localllm remote ls --json"],
    )
    listing.add_argument("-v", "--verbose", action="store_true", help="each replica and model")
    add_json_flag(listing)

    remove = add_command(
        actions,
        "rm",
        _remove,
        summary="forget a remote (and its stored API key)",
        description="Forget a remote; its models leave the model list.",
        examples=["localllm remote rm gpu"],
    )
    remove.add_argument("name", metavar="NAME")


_KEY_NOT_HERE = (
    "an API key is not taken on the command line, where your shell history would keep it: "
    "pipe it in with --api-key-stdin (or type it when asked), or name a variable with "
    "--api-key-env"
)


def _usage(context: Context, args: argparse.Namespace) -> int:
    raise CliError("say what to do: localllm remote add|ls|rm (see --help)", EXIT_USAGE)


def _add(context: Context, args: argparse.Namespace) -> int:
    if args.key_on_command_line is not None:
        raise CliError(_KEY_NOT_HERE, EXIT_USAGE)
    fields: dict = {"name": args.name, "urls": args.urls, "kind": args.kind}
    fields["aliases"] = _aliases(args.alias)
    if args.api_key_env:
        fields["api_key_env"] = args.api_key_env
    if args.api_key_stdin:
        fields["api_key"] = _read_key(context, args.name)
    if args.timeout is not None:
        fields["timeout_seconds"] = args.timeout
    if args.max_concurrency is not None:
        fields["max_concurrency"] = args.max_concurrency
    try:
        request = RemoteAddRequest(**fields)
    except ValueError as error:  # pydantic's: a timeout out of range, no URL...
        raise CliError(_first_problem(error), EXIT_USAGE) from None
    info = context.client().add_remote(request)
    replicas = f"{len(info.urls)} replica{'s' if len(info.urls) != 1 else ''}"
    context.print(f"added remote '{info.name}' ({replicas}, {info.kind} API)")
    context.print(f"its models are named {info.name}/<model id>; see `localllm remote ls`")
    return 0


def _aliases(pairs: list[str]) -> dict[str, str]:
    aliases = {}
    for pair in pairs:
        alias, sep, model_id = pair.partition("=")
        if not sep or not alias.strip() or not model_id.strip():
            raise CliError(f"--alias wants ALIAS=ID, not '{pair}'", EXIT_USAGE)
        aliases[alias.strip()] = model_id.strip()
    return aliases


def _read_key(context: Context, name: str) -> str:
    if context.stdin_is_tty():
        try:
            key = getpass.getpass(f"API key for {name} (not echoed): ")
        except EOFError:
            key = ""
    else:
        key = context.stdin.readline()
    key = key.strip()
    if not key:
        raise CliError("no API key came on stdin", EXIT_USAGE)
    return key


def _first_problem(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error)
    first = errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg"))


def _list(context: Context, args: argparse.Namespace) -> int:
    remotes = context.client().remotes().remotes
    if args.json:
        context.print(dump_json(remotes))
        return 0
    if not remotes:
        context.note("no remotes (add one: localllm remote add NAME URL)")
        return 0
    headers = ["NAME", "HEALTH", "LATENCY", "MODELS", "IN-FLIGHT"]
    context.print(table(headers, remote_rows(remotes, verbose=args.verbose)))
    return 0


def _remove(context: Context, args: argparse.Namespace) -> int:
    try:
        context.client().remove_remote(args.name)
    except RemoteNotFound:
        raise CliError(f"no remote named '{args.name}' (see `localllm remote ls`)") from None
    context.print(f"removed remote '{args.name}'")
    return 0
