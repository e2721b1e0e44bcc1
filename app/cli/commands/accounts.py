"""Credentials kept on this computer: the Hugging Face token (``login``/``logout``) and the
daemon's API key (``key``).

Both are stored locally (the system keyring, else a file only the user can read) by the
modules that own them; the daemon reads them from there or from the environment, so these
commands never need the daemon running.
"""

from __future__ import annotations

import argparse
import getpass

from localllm.app.cli.context import Context
from localllm.app.cli.errors import CliError
from localllm.app.cli.parsing import add_command
from localllm.daemon.security.keys import ApiKeyStore
from localllm.daemon.settings import DEFAULT_PORT
from localllm.model_registry.hf_token import delete_hf_token, store_hf_token

__all__ = ["register"]

TOKEN_PROMPT = "Hugging Face token (https://huggingface.co/settings/tokens): "


def register(commands: argparse._SubParsersAction) -> None:
    login = add_command(
        commands,
        "login",
        _login,
        summary="store a Hugging Face token for gated and private models",
        description="""
            Store a Hugging Face access token so pulls of gated or private repositories work.
            It goes to the system keyring, or else to a file only you can read in the config
            directory. HF_TOKEN in the environment, when set, takes precedence.
            """,
        examples=[
            "localllm login                      # asks for the token without echoing it",
            'echo "$MY_TOKEN" | localllm login   # from a script',
        ],
    )
    login.add_argument(
        "--token", help="the token (visible in your shell history; prefer the prompt or stdin)"
    )

    add_command(
        commands,
        "logout",
        _logout,
        summary="forget the stored Hugging Face token",
        description="Delete the Hugging Face token `localllm login` stored.",
        examples=["localllm logout"],
    )

    key = add_command(
        commands,
        "key",
        _key,
        summary="create (or show) the API key for serving beyond this computer",
        description="""
            Create the daemon's API key, or show the existing one, and say where it is kept.
            The daemon refuses to listen on a non-loopback address without a key; clients then
            send it as `Authorization: Bearer <key>`.
            """,
        examples=[
            "localllm key",
            "LOCALLLM_API_KEY=$(localllm key --quiet) localllm serve --host 0.0.0.0:11435",
        ],
    )
    key.add_argument("-q", "--quiet", action="store_true", help="print only the key")


def _login(context: Context, args: argparse.Namespace) -> int:
    token = args.token
    if token is None:
        token = _read_token(context)
    try:
        where = store_hf_token(token, context.settings.config_dir)
    except ValueError as error:
        raise CliError(str(error)) from None
    context.print(f"Saved your Hugging Face token in {where}.")
    if context.settings.hf_token:
        context.note("note: HF_TOKEN is set in this environment and is used instead")
    return 0


def _read_token(context: Context) -> str:
    if not context.stdin_is_tty():
        return context.stdin.readline()
    try:
        return getpass.getpass(TOKEN_PROMPT)
    except EOFError:
        raise CliError("no token given") from None


def _logout(context: Context, args: argparse.Namespace) -> int:
    if delete_hf_token(context.settings.config_dir):
        context.print("Removed the stored Hugging Face token.")
    else:
        context.print("No Hugging Face token was stored.")
    return 0


def _key(context: Context, args: argparse.Namespace) -> int:
    store = ApiKeyStore(context.settings.config_dir)
    key = store.create()
    if args.quiet:
        context.print(key)
        return 0
    context.print(f"API key: {key}")
    context.print(f"Kept in: {store.location}")
    context.print()
    context.print("Serve on your network with it:")
    context.print(f"  LOCALLLM_API_KEY={key} localllm serve --host 0.0.0.0:{DEFAULT_PORT}")
    context.print("Clients send it with every request:")
    context.print(f"  Authorization: Bearer {key}")
    context.print("  (openai-python: OpenAI(base_url=..., api_key=KEY))")
    return 0
