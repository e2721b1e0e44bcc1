"""``localllm run MODEL [PROMPT]``: one answer, or an interactive chat on a terminal.

Piped input becomes the prompt (``cat notes.txt | localllm run qwen "summarize"``); with no
prompt on a terminal the chat opens. A model that is not in the store is pulled first. For a
model that sees images, image files named in the prompt are attached. A thinking model's
reasoning is shown apart from the answer (:mod:`localllm.app.cli.thinking_output`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from localllm.app.cli.answer import stream_answer, timing_lines
from localllm.app.cli.attachments import ImageError, model_sees_images, user_message
from localllm.app.cli.chat_input import parse_options
from localllm.app.cli.chat_session import ChatSession
from localllm.app.cli.commands.pull import pull_model
from localllm.app.cli.context import Context
from localllm.app.cli.errors import EXIT_INTERRUPTED, EXIT_USAGE, CliError
from localllm.app.cli.parsing import add_command
from localllm.app.cli.thinking_output import THINK_VALUES, ThinkingOutput
from localllm.daemon.api import ShowResponse
from localllm.daemon.client import ModelNotFound

__all__ = ["build_prompt", "register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands,
        "run",
        _run,
        summary="chat with a model, or answer one prompt",
        description="""
            Answer PROMPT and exit, or, with no prompt on a terminal, start a chat (type /? in
            it for commands, \"\"\" for several lines, Ctrl-D or /bye to leave). Text piped in
            is read as the prompt, followed by PROMPT if given. A model not in the store is
            pulled first. For a model with the vision capability, a path in the prompt to a
            image file (.png, .jpg, .jpeg, .webp, .gif, .bmp) attaches that image.
            """,
        examples=[
            "localllm run qwen2.5:0.5b",
            'localllm run qwen2.5:0.5b "Why is the sky blue?"',
            'cat notes.txt | localllm run qwen2.5:0.5b "Summarize these notes"',
            'localllm run qwen2.5:0.5b --format json "Three colors as a JSON list"',
            'localllm run qwen2.5:0.5b -o temperature 0 -o num_predict 64 "Hi"',
            "localllm run qwen2.5:0.5b --verbose --keepalive 30m",
            'localllm run llava:7b "What is in this image? ./cat.png"',
            'localllm run qwen3:0.6b --think=low -o think_budget 256 "Is 1009 a prime?"',
            'localllm run qwen3:0.6b --hidethinking "Is 1009 a prime?"',
            "localllm run qwen2.5:7b --load-anyway",
        ],
    )
    parser.add_argument("model", metavar="MODEL", help="model to run")
    parser.add_argument("prompt", nargs="*", metavar="PROMPT", help="the prompt (words are joined)")
    parser.set_defaults(trailing_words="prompt")  # `run MODEL --verbose Why?` keeps "Why?"
    parser.add_argument(
        "--format", metavar="FORMAT", help='answer format: "json", or a JSON schema as text'
    )
    parser.add_argument(
        "--keepalive",
        metavar="DURATION",
        help="how long the model stays loaded afterwards, e.g. 5m, 1h, 0 (default 5m)",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="print timings and tokens per second afterwards"
    )
    parser.add_argument("-s", "--system", metavar="TEXT", help="system message for this run")
    parser.add_argument(
        "-o",
        "--option",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="a model parameter, e.g. -o temperature 0.2 (repeatable); -o think_budget N caps "
        "a thinking model's thinking at N tokens",
    )
    parser.add_argument(
        "--load-anyway",
        action="store_true",
        help="load the model even where its memory plan says it does not fit (the daemon "
        "refuses such a load otherwise, saying what would fit)",
    )
    _add_think_flags(parser)


def _add_think_flags(parser: argparse.ArgumentParser) -> None:
    """``--think``, ``--think=VALUE`` (a value only after "=", as in Ollama, so the flag never
    swallows the model or the prompt), ``--nothink`` and ``--hidethinking``."""
    think = parser.add_mutually_exclusive_group()
    think.add_argument(
        "--think",
        dest="think",
        action="store_const",
        const=True,
        help="think before answering (a thinking model); --think=low, =medium or =high sets "
        "the effort (gpt-oss), --think=false is --nothink",
    )
    for word, value in THINK_VALUES.items():
        think.add_argument(
            f"--think={word}",
            dest="think",
            action="store_const",
            const=value,
            help=argparse.SUPPRESS,
        )
    think.add_argument(
        "--nothink",
        dest="think",
        action="store_const",
        const=False,
        help="answer without thinking",
    )
    parser.add_argument(
        "--hidethinking",
        action="store_true",
        help="let the model think, but print only the answer",
    )


def build_prompt(words: list[str], piped: str | None) -> str:
    """The prompt from the arguments and any text piped in (piped text first, as Ollama)."""
    given = " ".join(words).strip()
    piped = (piped or "").strip()
    return "\n\n".join(part for part in (piped, given) if part)


def _run(context: Context, args: argparse.Namespace) -> int:
    try:
        options = parse_options(args.option)
    except ValueError as error:
        raise CliError(str(error), EXIT_USAGE) from None
    if args.load_anyway:
        options["load_anyway"] = True
    answer_format = _answer_format(args.format)
    interactive = not args.prompt and context.stdin_is_tty()
    piped = None if context.stdin_is_tty() else context.stdin.read()
    prompt = build_prompt(args.prompt, piped)
    if not interactive and not prompt:
        raise CliError("the prompt is empty: give one as an argument or pipe it in", EXIT_USAGE)
    info = _ensure_model(context, args.model)
    if info is None:
        return EXIT_INTERRUPTED
    sees_images = model_sees_images(info)
    settings = {"options": options, "keep_alive": args.keepalive, "format": answer_format}
    settings |= {"think": args.think, "hide_thinking": args.hidethinking}
    if interactive:
        session = ChatSession(
            context,
            args.model,
            verbose=args.verbose,
            system=args.system,
            sees_images=sees_images,
            thinks="thinking" in info.capabilities,
            **settings,
        )
        return session.run()
    messages = [{"role": "system", "content": args.system}] if args.system else []
    try:
        messages.append(user_message(prompt, sees_images, context.note))
    except ImageError as error:
        raise CliError(str(error)) from None
    chunks = context.client().chat(
        args.model,
        messages,
        options=options or None,
        keep_alive=args.keepalive,
        format=answer_format,
        think=args.think,
    )
    thinking = ThinkingOutput.choose(context.out, context.err, hidden=args.hidethinking)
    answer = stream_answer(chunks, context.out, thinking)
    if not answer.text.endswith("\n"):
        context.print()
    if args.verbose and answer.final:
        for line in timing_lines(answer.final):
            context.note(line)
    return 0


def _answer_format(text: str | None) -> str | dict[str, Any] | None:
    if text is None or text.strip().lower() == "json":
        return None if text is None else "json"
    try:
        schema = json.loads(text)
    except ValueError:
        raise CliError('--format takes "json" or a JSON schema', EXIT_USAGE) from None
    if not isinstance(schema, dict):
        raise CliError("--format: a JSON schema is a JSON object", EXIT_USAGE)
    return schema


def _ensure_model(context: Context, model: str) -> ShowResponse | None:
    """The model's ``show`` details, pulling it first if the store lacks it; None if the user
    interrupted the pull."""
    try:
        return context.client().show(model)
    except ModelNotFound:
        outcome = pull_model(context, model)
        if outcome == "paused":
            raise CliError(f"the pull of '{model}' was paused before it finished") from None
        return context.client().show(model) if outcome == "success" else None
