"""``localllm launch claude|codex|opencode``: start a coding agent against a local model.

What ``ollama launch`` does: make sure the daemon runs, pick a model that fits the agent (tools
and a context of at least 32k tokens, a loaded one first) unless ``--model`` names one, point
the agent at it (``app.cli.agents``: variables, ``-c`` overrides or a config file in a private
temporary folder, never the user's own config) and replace this process with the agent.
``--print`` shows all that instead, for people who start agents their own way.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from app.cli.agents import AGENTS, MIN_CONTEXT, Agent, Setup, Target
from app.cli.commands.running import same_model
from app.cli.context import Context
from app.cli.errors import CliError
from app.cli.parsing import add_command
from daemon.api import ShowResponse
from daemon.client import ClientError
from daemon.client.launcher import connect_url

__all__ = ["register"]

_KEY_PLACEHOLDER = "localllm"  # what agents send when the daemon needs no key
_SUGGESTED = "qwen2.5-coder:7b"


def register(commands: argparse._SubParsersAction) -> None:
    launch = add_command(
        commands,
        "launch",
        _launch,
        summary="start a coding agent (Claude Code, Codex, opencode) on a local model",
        description=f"""
            Start Claude Code, Codex or opencode against a model of this computer. The daemon
            is started if need be. Without --model, a model with tools and a context of at
            least {MIN_CONTEXT:,} tokens is picked (a loaded one first). The agent's settings go
            on its command line and in its environment, or in a private temporary folder: your
            own config files are left alone. Arguments after `--` go to the agent.
            """,
        examples=[
            "localllm launch claude",
            "localllm launch codex --model qwen2.5-coder:7b",
            'localllm launch claude -- -p "What does this repository do?"',
            "localllm launch opencode --print",
        ],
    )
    launch.add_argument(
        "agent", choices=sorted(AGENTS), metavar="AGENT", help="claude, codex or opencode"
    )
    launch.add_argument("--model", metavar="MODEL", help="the model to use (default: picked)")
    launch.add_argument(
        "--print",
        action="store_true",
        help="print the environment, arguments and config the agent would get, and exit",
    )
    launch.set_defaults(passes_through=True)  # what follows goes to the agent


def _launch(context: Context, args: argparse.Namespace) -> int:
    agent = AGENTS[args.agent]
    environment = context.settings.environment
    program = shutil.which(agent.program, path=environment.get("PATH"))
    if program is None and not args.print:
        raise CliError(
            f"{agent.title} is not installed (no `{agent.program}` on PATH); install it with "
            f"`{agent.install_hint}` and run this again"
        )
    model, runs_at = _model(context, agent, args.model)
    key = context.settings.api_key or _KEY_PLACEHOLDER
    target = Target(connect_url(context.settings), key, model, runs_at)
    folder = Path(tempfile.mkdtemp(prefix=f"localllm-{agent.name}-"))  # 0700: the key may be in it
    setup = agent.setup(target, folder)
    for name, text in setup.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    if not setup.files:
        folder.rmdir()
    argv = [program or agent.program, *setup.args, *_agent_args(args.extra)]
    if args.print:
        _show(context, agent, target, setup, folder, argv)
        return 0
    context.note(f"starting {agent.title} on {model} (context {runs_at:,} tokens)")
    env = {**environment, **setup.env}
    context.out.flush()
    context.err.flush()
    if os.name == "nt":  # no exec on Windows: wait for the agent and pass on its status
        return subprocess.call(argv, env=env)
    os.execve(argv[0], argv, env)
    return 0  # not reached


def _agent_args(extra: list[str]) -> list[str]:
    return extra[1:] if extra[:1] == ["--"] else extra


# -- the model ------------------------------------------------------------------------------
def _model(context: Context, agent: Agent, wanted: str | None) -> tuple[str, int]:
    """The model to use and the context it runs with, warning about what falls short."""
    client = context.client()
    if wanted:
        shown = client.show(wanted)
        for problem in _shortfalls(shown):
            context.note(f"warning: {wanted} {problem}; {agent.title} may not work well")
        name = wanted
    else:
        name, shown = _pick(context, agent)
    runs_at = shown.runs_with.context_length if shown.runs_with else _trained(shown)
    if runs_at and runs_at < MIN_CONTEXT:
        reason = f" ({shown.runs_with.context_reason})" if shown.runs_with else ""
        context.note(
            f"warning: {name} runs with a context of {runs_at:,} tokens here{reason}; "
            f"{agent.title}'s prompts need about {MIN_CONTEXT:,}: start the daemon with "
            f"LOCALLLM_CONTEXT_LENGTH={MIN_CONTEXT}, or give the model PARAMETER num_ctx "
            f"{MIN_CONTEXT} in a Modelfile"
        )
    return name, runs_at or MIN_CONTEXT


def _pick(context: Context, agent: Agent) -> tuple[str, ShowResponse]:
    """The first model that fits: the loaded ones first, then the newest."""
    client = context.client()
    loaded = [m.name or m.model for m in client.running()]
    models = sorted(client.list_models(), key=lambda m: m.modified_at, reverse=True)
    ordered = sorted(models, key=lambda m: not any(same_model(n, m.name) for n in loaded))
    for summary in ordered:
        try:
            shown = client.show(summary.name)
        except ClientError:
            continue  # a remote that does not answer, a model removed meanwhile
        if not _shortfalls(shown):
            return summary.name, shown
    raise CliError(
        f"no model here fits {agent.title}: it needs tools and a context of at least "
        f"{MIN_CONTEXT:,} tokens. Pull one (`localllm pull {_SUGGESTED}`) or name one with "
        "--model"
    )


def _shortfalls(shown: ShowResponse) -> list[str]:
    problems = []
    if "tools" not in shown.capabilities:
        problems.append("has no tools capability (its template does not describe tools)")
    trained = _trained(shown)
    if trained and trained < MIN_CONTEXT:
        problems.append(f"was trained for {trained:,} tokens of context, under {MIN_CONTEXT:,}")
    return problems


def _trained(shown: ShowResponse) -> int:
    """The context the model was trained for (``<architecture>.context_length``); 0: unknown."""
    for key, value in shown.model_info.items():
        if key.endswith(".context_length") and isinstance(value, int):
            return value
    return 0


# -- --print --------------------------------------------------------------------------------
def _show(
    context: Context, agent: Agent, target: Target, setup: Setup, folder: Path, argv: list[str]
) -> None:
    context.print(
        f"# {agent.title} on localllm at {target.url}: {target.model}, "
        f"context {target.context:,} tokens"
    )
    for name, text in setup.files.items():
        context.print(f"# {folder / name}:")
        context.print(text.rstrip("\n"))
    for name, value in setup.env.items():
        context.print(f"export {name}={shlex.quote(value)}")
    context.print(shlex.join([agent.program, *argv[1:]]))
