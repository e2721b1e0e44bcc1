"""The real coding agents, installed from npm at pinned versions into a cache folder.

``python -m tests.support.agents install`` puts Claude Code, Codex and opencode under
``~/.cache/localllm-agents`` (or ``LOCALLLM_AGENTS_DIR``), outside the repository; ``.ci/run``
runs it when npm can reach its registry. The end-to-end agent tests skip, saying so, when an
agent is not there. Install scripts run here rather than through npm (which newer versions
hold back until approved): they only copy each agent's native binary into place.

The agents are run offline-quiet (``quiet_env``): no update checks, telemetry or model list
downloads, any of which would block or fail on a machine without the internet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["AGENTS_DIR", "PACKAGES", "agent_path", "install", "quiet_env"]

PACKAGES = {  # agent -> (npm package, pinned version, its install script or None)
    "claude": ("@anthropic-ai/claude-code", "2.1.332", "install.cjs"),
    "codex": ("@openai/codex", "0.171.0", None),
    "opencode": ("opencode-ai", "1.18.33", "postinstall.mjs"),
}
AGENTS_DIR = Path(
    os.environ.get("LOCALLLM_AGENTS_DIR") or Path.home() / ".cache" / "localllm-agents"
)


def agent_path(name: str) -> Path | None:
    """The installed agent's executable, or None."""
    path = AGENTS_DIR / "node_modules" / ".bin" / name
    return path if path.exists() else None


def quiet_env(home: Path) -> dict[str, str]:
    """Variables that keep the agents from phoning home, with ``home`` as their HOME."""
    return {
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "NO_COLOR": "1",
    }


def install() -> None:
    """npm install the pinned agents into ``AGENTS_DIR``, then run their install scripts."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed: the coding agent tests will be skipped")
    specs = [f"{package}@{version}" for package, version, _ in PACKAGES.values()]
    AGENTS_DIR.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(AGENTS_DIR), "--no-audit", "--no-fund"]
    subprocess.run([*command, "--ignore-scripts", *specs], check=True, timeout=600)
    for package, _, script in PACKAGES.values():
        if script:
            folder = AGENTS_DIR / "node_modules" / package
            subprocess.run(["node", script], cwd=folder, check=True, timeout=300)
    for name in PACKAGES:
        version = subprocess.run(
            [str(agent_path(name)), "--version"], capture_output=True, text=True, timeout=120
        )
        print(f"{name}: {version.stdout.strip() or version.stderr.strip()}")


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        raise SystemExit("usage: python -m tests.support.agents install")
    install()
