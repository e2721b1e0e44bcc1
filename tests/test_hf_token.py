"""Where the Hugging Face token is kept and found."""

from __future__ import annotations

import stat

import pytest
from keyring.errors import NoKeyringError, PasswordDeleteError

from localllm.model_registry.hf_token import delete_hf_token, load_hf_token, store_hf_token


class MemoryKeyring:
    """A keyring backend in memory (not a KeyringBackend subclass: those register globally)."""

    def __init__(self) -> None:
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.passwords.get((service, username))

    def set_password(self, service, username, password):
        self.passwords[(service, username)] = password

    def delete_password(self, service, username):
        if self.passwords.pop((service, username), None) is None:
            raise PasswordDeleteError("not there")


class BrokenKeyring(MemoryKeyring):
    def get_password(self, service, username):
        raise NoKeyringError("no backend")

    def set_password(self, service, username, password):
        raise NoKeyringError("no backend")


def test_environment_token_wins(tmp_path):
    keyring = MemoryKeyring()
    store_hf_token("hf_from_keyring", tmp_path, keyring_backend=keyring)
    assert load_hf_token(" hf_env ", tmp_path, keyring_backend=keyring) == "hf_env"
    assert load_hf_token(None, tmp_path, keyring_backend=keyring) == "hf_from_keyring"
    assert load_hf_token("", tmp_path, keyring_backend=keyring) == "hf_from_keyring"


def test_keyring_is_used_when_it_works(tmp_path):
    keyring = MemoryKeyring()
    assert store_hf_token("hf_secret", tmp_path, keyring_backend=keyring) == "the system keyring"
    assert keyring.passwords == {("localllm", "huggingface"): "hf_secret"}
    assert not (tmp_path / "hf_token").exists()


def test_file_fallback_is_private(tmp_path):
    keyring = BrokenKeyring()
    config = tmp_path / "config"
    where = store_hf_token("hf_secret\n", config, keyring_backend=keyring)
    assert where.startswith("a file only you can read")
    path = config / "hf_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_hf_token(None, config, keyring_backend=keyring) == "hf_secret"
    assert [p.name for p in config.iterdir()] == ["hf_token"]  # no temp file left


def test_no_token_anywhere(tmp_path):
    assert load_hf_token(None, tmp_path, keyring_backend=BrokenKeyring()) is None
    assert load_hf_token(None, None, keyring_backend=MemoryKeyring()) is None


def test_delete(tmp_path):
    keyring = MemoryKeyring()
    store_hf_token("hf_a", tmp_path, keyring_backend=keyring)
    assert delete_hf_token(tmp_path, keyring_backend=keyring)
    assert load_hf_token(None, tmp_path, keyring_backend=keyring) is None
    assert not delete_hf_token(tmp_path, keyring_backend=keyring)


@pytest.mark.parametrize("bad", ["", "   ", "hf_\u00e9", "hf_a\nb"])
def test_rejects_what_is_not_a_token(tmp_path, bad):
    with pytest.raises(ValueError):
        store_hf_token(bad, tmp_path, keyring_backend=MemoryKeyring())


def test_default_backend_on_a_server_without_keyring_falls_back_to_the_file(tmp_path):
    # On this kind of machine keyring has no usable backend: the file must be used.
    import keyring
    from keyring.backends import fail

    if not isinstance(keyring.get_keyring(), fail.Keyring):
        pytest.skip("this machine has a working keyring")
    assert store_hf_token("hf_x", tmp_path).startswith("a file only you can read")
    assert load_hf_token(None, tmp_path) == "hf_x"
