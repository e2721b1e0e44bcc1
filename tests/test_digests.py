"""Digests: the strict check that guards every path into the store."""

from __future__ import annotations

import hashlib
import io

import pytest

from localllm.model_registry.digests import Digest, sha256_of_bytes, sha256_of_file
from localllm.model_registry.errors import InvalidDigestError

HEX = hashlib.sha256(b"x").hexdigest()


@pytest.mark.parametrize("text", [f"sha256:{HEX}", f"sha256-{HEX}"])
def test_both_spellings_parse_to_the_same_digest(text):
    digest = Digest.parse(text)
    assert digest.hex == HEX
    assert digest.wire == f"sha256:{HEX}"
    assert digest.filename == f"sha256-{HEX}"


@pytest.mark.parametrize(
    "text",
    [
        "",
        HEX,
        f"sha256:{HEX.upper()}",
        f"sha256:{HEX[:-1]}",
        f"sha256:{HEX}0",
        f"sha256:{HEX}\n",
        f" sha256:{HEX}",
        f"sha256_{HEX}",
        f"sha512:{HEX}",
        f"SHA256:{HEX}",
        "sha256:" + "g" * 64,
        "sha256:../../../../etc/passwd",
        f"sha256:{HEX[:32]}/../{HEX[:28]}",
        f"sha256-{HEX}/..",
        f"sha256:{HEX}\x00",
        "sha256:" + "\uff10" * 64,  # full-width zeros
        None,
        123,
        b"sha256:" + HEX.encode(),
    ],
)
def test_anything_else_is_rejected(text):
    with pytest.raises(InvalidDigestError):
        Digest.parse(text)


def test_hash_helpers_agree():
    data = b"hello world" * 100_000
    assert sha256_of_bytes(data) == sha256_of_file(io.BytesIO(data))
    assert sha256_of_bytes(data).hex == hashlib.sha256(data).hexdigest()
