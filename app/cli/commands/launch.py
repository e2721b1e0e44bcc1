"""``localllm launch claude|codex|opencode``: start a coding agent against a local model.

What ``ollama launch`` does: make sure the daemon runs, pick a model that fits the agent (tools
and a context of at least 32k tokens, a loaded one first) unless ``--model`` names one, point
the agent at it (``app.cli.agents``: variables, ``-c`` overrides or a config file in a private
temporary folder, never the user's own config), run the agent and pass on its exit status.
``--print`` shows all that instead, for people who start agents their own way, and writes
nothing.

The private folder may hold the API key, so it lives exactly as long as the agent: made 0700
(checked), its files written 0600, and removed when the agent exits, whatever ends it. That is
why localllm waits for the agent rather than becoming it (exec): while the agent runs, Ctrl-C
(SIGINT, SIGQUIT), which the terminal sends to both, is left to the agent, and SIGTERM or
SIGHUP (``kill``, a closed terminal) is passed on to it; only SIGKILL leaves the folder behind.
The program is found on PATH without the current folder, and without cmd.exe on Windows
(``app.cli.agent_program``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from localllm.app.cli.agent_program import ProgramError, find_program
from localllm.app.cli.agents import AGENTS, MIN_CONTEXT, Agent, Setup, Target
from localllm.app.cli.commands.running import same_model
from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.parsing import add_command
from localllm.daemon.api import ShowResponse
from localllm.daemon.client import ClientError
from localllm.daemon.client.launcher import connect_url

__all__ = ["register"]

_KEY_PLACEHOLDER = "localllm"  # what agents send when the daemon needs no key
_SUGGESTED = "qwen2.5-coder:7b"
_WINDOWS_PATHEXT = ".COM;.EXE;.BAT;.CMD"  # Windows' own default
_LEFT_TO_THE_AGENT = ("SIGINT", "SIGQUIT")  # the terminal's keys: sent to the agent too
_PASSED_ON = ("SIGTERM", "SIGHUP")  # sent to localllm alone: the agent must hear them


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
            on its command line and in its environment, or in a private temporary folder
            removed when the agent exits: your own config files are left alone. Arguments
            after `--` go to the agent.
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
    program = () if args.print else _program(agent, environment)
    model, runs_at = _model(context, agent, args.model)
    key = context.settings.api_key or _KEY_PLACEHOLDER
    target = Target(connect_url(context.settings), key, model, runs_at)
    extra = _agent_args(args.extra)
    if args.print:
        _show(context, agent, target, agent.setup(target, Path.cwd()), extra)
        return 0
    context.note(f"starting {agent.title} on {model} (context {runs_at:,} tokens)")
    context.out.flush()
    context.err.flush()
    with _Relay() as relay, _private_folder(context, agent) as folder:
        setup = agent.setup(target, folder)
        for name, text in setup.files.items():
            _write_private(folder / name, text)
        return relay.run(agent, [*program, *setup.args, *extra], {**environment, **setup.env})


def _agent_args(extra: list[str]) -> list[str]:
    return extra[1:] if extra[:1] == ["--"] else extra


def _program(agent: Agent, environment: Mapping[str, str]) -> tuple[str, ...]:
    windows = os.name == "nt"
    try:
        cwd = os.getcwd()
    except OSError:  # the current folder was removed: nothing to leave out
        cwd = ""
    try:
        program = find_program(
            agent.program,
            windows=windows,
            path=environment.get("PATH", os.defpath),
            pathext=environment.get("PATHEXT", _WINDOWS_PATHEXT),
            cwd=cwd,
        )
    except ProgramError as error:
        raise CliError(
            f"{agent.title} cannot be started safely: {error}. Reinstall it with "
            f"`{agent.install_hint}`, or start it yourself as `localllm launch {agent.name} "
            "--print` shows"
        ) from error
    if program is None:
        raise CliError(
            f"{agent.title} is not installed (no `{agent.program}` on PATH); install it with "
            f"`{agent.install_hint}` and run this again"
        )
    return program


# -- the agent's private folder and its run ---------------------------------------------------
@contextlib.contextmanager
def _private_folder(context: Context, agent: Agent) -> Iterator[Path]:
    """A folder only this user can read, removed when the block ends, however it ends."""
    folder = Path(tempfile.mkdtemp(prefix=f"localllm-{agent.name}-"))  # 0700
    try:
        _check_private(folder)
        yield folder
    finally:
        try:
            shutil.rmtree(folder)
        except OSError as error:
            context.note(
                f"warning: the agent's private folder {folder.name} (in the temporary folder) "
                f"could not be removed ({error.strerror}); it may hold the API key: delete it"
            )


def _check_private(folder: Path) -> None:
    if os.name == "nt":  # a folder in the user's own temporary folder; no modes to check
        return
    found = folder.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        raise CliError(
            "the agent's private folder is not private (another user could read it): check "
            "the temporary folder (TMPDIR) and run this again"
        )


def _write_private(path: Path, text: str) -> None:
    """A new file only this user can read (never through a link put there first)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(path, flags, 0o600), "w", encoding="utf-8") as stream:
        stream.write(text)


# what signal.signal takes and gives back: a function, SIG_DFL, SIG_IGN, or None (not from Python)
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class _Relay:
    """Runs the agent while localllm stays to clean up after it: the terminal's Ctrl-C reaches
    the agent by itself and is left to it; SIGTERM and SIGHUP are passed on to it. Handlers
    are put back when the block ends; a signal ignored on entry stays ignored (the agent
    inherits that, as it would have through exec)."""

    def __init__(self) -> None:
        self._child: subprocess.Popen | None = None
        self._pending: list[int] = []
        self._previous: dict[int, _Handler] = {}

    def __enter__(self) -> _Relay:
        for name in _LEFT_TO_THE_AGENT + _PASSED_ON:
            number = getattr(signal, name, None)
            if number is None or signal.getsignal(number) in (signal.SIG_IGN, None):
                continue
            with contextlib.suppress(ValueError):  # not the main thread: nothing to relay
                self._previous[number] = signal.signal(number, self._received)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def run(self, agent: Agent, argv: list[str], env: dict[str, str]) -> int:
        """The agent's exit status, as a shell gives it (128 + the signal that killed it)."""
        try:
            self._child = subprocess.Popen(argv, env=env)
        except OSError as error:
            raise CliError(
                f"{agent.title} could not be started ({error.strerror}); reinstall it with "
                f"`{agent.install_hint}`"
            ) from error
        for number in self._pending:
            self._child.send_signal(number)
        status = self._child.wait()
        return 128 - status if status < 0 else status

    def _received(self, number: int, frame: FrameType | None) -> None:
        if signal.Signals(number).name not in _PASSED_ON:
            return  # Ctrl-C: the agent got it too and decides
        if self._child is None:
            self._pending.append(number)
        else:
            self._child.send_signal(number)


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
def _show(context: Context, agent: Agent, target: Target, setup: Setup, extra: list[str]) -> None:
    """The setup as a shell takes it; a file is shown, not written: saved where its variable
    says (this folder), it holds the API key, so it is for the user to keep or delete."""
    context.print(
        f"# {agent.title} on localllm at {target.url}: {target.model}, "
        f"context {target.context:,} tokens"
    )
    for name, text in setup.files.items():
        context.print(f"# save as {name} here (it holds the API key: keep it private):")
        context.print(text.rstrip("\n"))
    for name, value in setup.env.items():
        context.print(f"export {name}={shlex.quote(value)}")
    context.print(shlex.join([agent.program, *setup.args, *extra]))
