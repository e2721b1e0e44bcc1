"""A remote's API key: the keyring (else a user-only file), or a variable of the daemon's
environment that the remote names. Never in the remotes file, never in a response.

A variable is read only when its name looks like a key for an engine (``TEAM_KEY``,
``VLLM_API_KEY``, ``..._TOKEN``) and is none of the daemon's own (``LOCALLLM_*``) nor a
credential for a hub or a cloud account (``HF_TOKEN``, ``AWS_*``, ``GITHUB_TOKEN``...): the
value goes as a Bearer token to the remote's URL, so a remote must never be a way to send such
a secret elsewhere. That holds for remotes already in the remotes file too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

from localllm.model_registry.credentials import Credential

__all__ = ["RemoteKeys", "key_variable_problem"]

log = logging.getLogger("localllm.remotes")

_KEY_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,62}_(API_KEY|APIKEY|KEY|TOKEN)")
# the daemon's own, a model hub's, and the accounts of clouds, code hosts and package indexes
_NEVER = (
    "LOCALLLM_", "HF_", "HUGGING_FACE_", "HUGGINGFACE_", "AWS_", "AMAZON_", "AZURE_", "ARM_",
    "GOOGLE_", "GCP_", "GCLOUD_", "CLOUDSDK_", "GITHUB_", "GH_", "GITLAB_", "BITBUCKET_",
    "DOCKER_", "NPM_", "PYPI_", "TWINE_", "CARGO_", "SSH_", "VAULT_", "KUBE", "DIGITALOCEAN_",
    "HEROKU_", "CLOUDFLARE_", "CF_", "OCI_", "IBM_", "ALIBABA_", "ALICLOUD_",
)  # fmt: skip


def key_variable_problem(name: str) -> str | None:
    """Why the environment variable ``name`` may not hold a remote's key; None if it may."""
    if not _KEY_NAME.fullmatch(name):
        return (
            "must be named like an API key variable: capital letters, digits and '_', ending "
            "in _API_KEY, _KEY or _TOKEN (TEAM_KEY, VLLM_API_KEY)"
        )
    if name.startswith(_NEVER):
        return (
            "is the daemon's own or a hub's or cloud account's credential, which is never sent "
            "to a remote"
        )
    return None


def _credential(name: str) -> Credential:
    return Credential(f"remote-{name}", f"remote-{name}.key")


class RemoteKeys:
    def __init__(self, config_dir: Path, environment: Mapping[str, str], use_keyring: bool = True):
        self._config_dir = Path(config_dir)
        self._environment = environment
        self._backend = None if use_keyring else False

    def store(self, name: str, key: str) -> None:
        _credential(name).store(key, self._config_dir, keyring_backend=self._backend)

    def forget(self, name: str) -> None:
        _credential(name).delete(self._config_dir, keyring_backend=self._backend)

    def key(self, name: str, env: str | None) -> str | None:
        """The key to send to remote ``name``: its variable's value first (when the variable
        may hold one), then the stored one."""
        problem = key_variable_problem(env) if env else None
        if problem is not None:
            log.warning("remote %s: its key variable %s is not read: it %s", name, env, problem)
        elif env and self._environment.get(env):
            return self._environment[env]
        return _credential(name).load(self._config_dir, keyring_backend=self._backend)
