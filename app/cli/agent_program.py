"""Where an agent's program is, and how to start it without a shell, on every platform.

``localllm launch`` starts a program found on PATH with arguments the user and the daemon
chose, so two things Windows (and ``shutil.which`` there) does are refused:

- Windows looks in the current folder before PATH: a ``claude.cmd`` in a cloned repository
  would run instead of the installed one. Here the current folder is never searched, neither
  by that rule nor through a relative PATH entry (``.``, an empty one) or one naming it.
- A ``.cmd`` or ``.bat`` runs through cmd.exe, which reads the whole command line again:
  ``&``, ``|`` or ``%VAR%`` in an argument become commands ("BatBadBut", CVE-2024-24576).
  npm installs Claude Code, Codex and opencode on Windows as such a shim, which only runs
  ``node <the package's script>`` (or the package's own ``.exe``): that is read from the shim
  and started directly. Any other script is refused, with what to do.

``find_program`` takes the platform, PATH, PATHEXT and the current folder as arguments, so
Windows' rules are tested on any computer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["ProgramError", "find_program"]

_WINDOWS_RUNS = (".exe", ".com")  # what CreateProcess starts itself
_SHIMS = (".cmd", ".bat")  # what it hands to cmd.exe
_SHIM_BYTES = 64 * 1024  # npm's shims are under 1 KB
# a path in quotes, relative to the shim's folder: "%dp0%\..." (npm) or "%~dp0\..." (older)
_SHIM_PATH = re.compile(r'"%(?:~dp0|dp0%)\\([^"%]+)"', re.IGNORECASE)


class ProgramError(Exception):
    """The program is there but cannot be started safely (the message says why)."""


def find_program(
    name: str, *, windows: bool, path: str, pathext: str, cwd: str
) -> tuple[str, ...] | None:
    """The command line that starts ``name``, before its own arguments; None when no folder of
    ``path`` has it. Raises ProgramError for a script that would need cmd.exe."""
    for folder in _folders(path, windows, cwd):
        found = _in_folder(Path(folder), name, windows, pathext)
        if found is None:
            continue
        if not windows or found.suffix.lower() in _WINDOWS_RUNS:
            return (str(found),)
        return _through_shim(found, windows=windows, path=path, pathext=pathext, cwd=cwd)
    return None


def _folders(path: str, windows: bool, cwd: str) -> list[str]:
    """PATH's folders, less the current one however it is named."""
    here = _same(cwd, windows) if cwd else None
    folders = path.split(";" if windows else ":")
    return [f for f in folders if os.path.isabs(f.strip('"')) and _same(f, windows) != here]


def _same(folder: str, windows: bool) -> str:
    normal = os.path.normpath(folder.strip('"'))
    return normal.casefold() if windows else normal


def _in_folder(folder: Path, name: str, windows: bool, pathext: str) -> Path | None:
    if not windows:
        candidate = folder / name
        return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
    try:  # Windows' names are case-blind: "claude.cmd" is found for PATHEXT's ".CMD"
        entries = {entry.casefold(): entry for entry in os.listdir(folder)}
    except OSError:
        return None
    extensions = [e.casefold() for e in pathext.split(";") if e.strip()]
    for extension in extensions:
        if extension not in _WINDOWS_RUNS + _SHIMS:
            continue  # .js, .vbs, .ps1: neither started directly nor safely
        entry = entries.get((name + extension).casefold())
        if entry is not None and (folder / entry).is_file():
            return folder / entry
    return None


def _through_shim(
    shim: Path, *, windows: bool, path: str, pathext: str, cwd: str
) -> tuple[str, ...]:
    """What npm's cmd shim runs: ``node <script>`` (node beside the shim, else on PATH), or
    the package's own program."""
    try:
        with shim.open("rb") as stream:
            text = stream.read(_SHIM_BYTES).decode("utf-8", errors="replace")
    except OSError as error:
        raise ProgramError(f"{shim.name} cannot be read ({error.strerror})") from error
    named = list(dict.fromkeys(_SHIM_PATH.findall(text)))
    runs_node = any(p.casefold() == "node.exe" for p in named)
    targets = [p for p in named if p.casefold() != "node.exe"]
    if len(targets) != 1 or not (runs_node or targets[0].casefold().endswith(_WINDOWS_RUNS)):
        raise ProgramError(
            f"{shim.name} is a {shim.suffix} script that is not npm's, and cmd.exe would read "
            "the agent's arguments as commands"
        )
    target = shim.parent.joinpath(*targets[0].split("\\"))
    if not target.is_file():
        raise ProgramError(f"{shim.name} starts {targets[0]}, which is not there")
    if not runs_node:
        return (str(target),)
    node = shim.parent / "node.exe"
    if not node.is_file():
        found = find_program("node", windows=windows, path=path, pathext=".EXE", cwd=cwd)
        if found is None:
            raise ProgramError(f"{shim.name} runs node, and node.exe is not on PATH")
        node = Path(found[0])
    return (str(node), str(target))
