"""The commands about models in the store: ``list``/``ls``, ``show``, ``cp`` and ``rm``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from localllm.app.cli.context import Context
from localllm.app.cli.errors import EXIT_USAGE, CliError
from localllm.app.cli.formatting import format_size, parse_time, relative_time, short_id, table
from localllm.app.cli.parsing import add_command, add_json_flag, dump_json
from localllm.app.cli.plan_view import render_plan
from localllm.app.cli.show_view import parameter_lines, render_show
from localllm.daemon.client import ClientError

__all__ = ["register"]

_SHOW_FIELDS = ("modelfile", "parameters", "template", "system", "license")
_KV_CACHE_TYPES = ("f16", "q8_0", "q4_0")
_PLAN_OPTIONS: tuple[tuple[str, str], ...] = (("ctx", "num_ctx"), ("parallel", "num_parallel"))
_PLAN_OPTIONS += (("kv_cache_type", "kv_cache_type"),)


def register(commands: argparse._SubParsersAction) -> None:
    listing = add_command(
        commands,
        "list",
        _list,
        aliases=["ls"],
        summary="list the models in the store",
        description="""
            List downloaded and created models: name, id, size and when it changed. Models
            served by a remote engine (`localllm remote`) say which in a REMOTE column.
            """,
        examples=[
            "localllm list",
            "localllm ls qwen        # only names containing 'qwen'",
            "localllm list --json",
        ],
    )
    listing.add_argument("filter", nargs="?", metavar="TEXT", help="show names containing TEXT")
    add_json_flag(listing)

    show = add_command(
        commands,
        "show",
        _show,
        summary="show a model's details, template, system prompt, license, or memory plan",
        description="""
            Summarize a model (architecture, parameter count, context and embedding length,
            quantization, capabilities, parameters, system prompt, license), or print one of
            its parts in full with a flag. --plan prints what loading it would take in memory,
            part by part (weights, caches, buffers), where each part goes (RAM or GPU), the
            totals against free memory and whether it fits, without loading it; --ctx,
            --parallel and --kv-cache-type plan other settings.
            """,
        examples=[
            "localllm show qwen2.5:0.5b",
            "localllm show qwen2.5:0.5b --modelfile > Modelfile   # start a custom model",
            "localllm show qwen2.5:0.5b --template",
            "localllm show qwen2.5:0.5b --plan",
            "localllm show qwen2.5:0.5b --plan --ctx 32768 --parallel 1 --kv-cache-type q8_0",
            "localllm show qwen2.5:0.5b --json",
        ],
    )
    show.add_argument("name", metavar="NAME")
    parts = show.add_mutually_exclusive_group()
    for part in _SHOW_FIELDS:
        parts.add_argument(f"--{part}", action="store_true", help=f"print the model's {part}")
    parts.add_argument(
        "--plan",
        action="store_true",
        help="print what loading it would take in memory, and whether it fits",
    )
    show.add_argument(
        "--ctx", type=_positive, metavar="N", help="with --plan: N tokens of context a slot"
    )
    show.add_argument(
        "--parallel", type=_positive, metavar="N", help="with --plan: N slots (requests at once)"
    )
    show.add_argument(
        "--kv-cache-type",
        choices=_KV_CACHE_TYPES,
        metavar="T",
        help=f"with --plan: the K/V cache type ({', '.join(_KV_CACHE_TYPES)})",
    )
    show.add_argument(
        "-v", "--verbose", action="store_true", help="include long metadata (vocabularies)"
    )
    add_json_flag(show)

    copy = add_command(
        commands,
        "cp",
        _copy,
        summary="copy a model under a new name (shares its files)",
        description="Copy a model to a new name; the copy shares every file with the original.",
        examples=["localllm cp qwen2.5:0.5b my-assistant"],
    )
    copy.add_argument("source", metavar="SOURCE")
    copy.add_argument("destination", metavar="DESTINATION")

    remove = add_command(
        commands,
        "rm",
        _remove,
        summary="remove models",
        description="""
            Remove models from the store. Files another model still uses are kept; the rest
            are deleted.
            """,
        examples=["localllm rm qwen2.5:0.5b", "localllm rm my-assistant my-coder"],
    )
    remove.add_argument("names", nargs="+", metavar="NAME")


def _list(context: Context, args: argparse.Namespace) -> int:
    models = context.client().list_models()
    if args.filter:
        models = [m for m in models if args.filter.lower() in m.name.lower()]
    if args.json:
        context.print(dump_json(models))
        return 0
    now = datetime.now(UTC)
    rows = [
        [
            m.name or m.model,
            "-" if m.remote else short_id(m.digest),
            "-" if m.remote else format_size(m.size),
            "-" if m.remote else relative_time(parse_time(m.modified_at), now),
        ]
        for m in models
    ]
    headers = ["NAME", "ID", "SIZE", "MODIFIED"]
    if any(m.remote for m in models):  # served by another engine (`localllm remote ls`)
        headers.append("REMOTE")
        rows = [[*row, m.remote or ""] for row, m in zip(rows, models, strict=True)]
    context.print(table(headers, rows))
    return 0


def _show(context: Context, args: argparse.Namespace) -> int:
    options = {key: getattr(args, flag) for flag, key in _PLAN_OPTIONS if getattr(args, flag)}
    if options and not args.plan:
        named = [f"--{flag.replace('_', '-')}" for flag, key in _PLAN_OPTIONS if key in options]
        raise CliError(f"{', '.join(named)} set what --plan plans: add --plan", EXIT_USAGE)
    if args.plan:
        return _show_plan(context, args.name, options, args.json)
    info = context.client().show(args.name, verbose=args.verbose)
    if args.json:
        context.print(dump_json(info))
        return 0
    part = next((name for name in _SHOW_FIELDS if getattr(args, name)), None)
    if part is None:
        context.out.write(render_show(info))
    elif part == "parameters":
        context.print("\n".join(parameter_lines(info.parameters)))
    else:
        context.print(_text(getattr(info, part)))
    return 0


def _show_plan(context: Context, name: str, options: dict[str, object], as_json: bool) -> int:
    plan = context.client().plan(name, options)
    context.out.write(dump_json(plan) + "\n" if as_json else render_plan(plan))
    return 0


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _text(value: object) -> str:
    if isinstance(value, list):
        return "\n\n".join(str(item) for item in value)
    return "" if value is None else str(value).rstrip("\n")


def _copy(context: Context, args: argparse.Namespace) -> int:
    context.client().copy(args.source, args.destination)
    context.print(f"copied '{args.source}' to '{args.destination}'")
    return 0


def _remove(context: Context, args: argparse.Namespace) -> int:
    """Remove each name; one that fails does not stop the others (the status says so)."""
    client, failed = context.client(), False
    for name in args.names:
        try:
            client.delete(name)
        except ClientError as error:
            context.note(f"Error: {' '.join(str(error).split())}")
            failed = True
        else:
            context.print(f"deleted '{name}'")
    return 1 if failed else 0
