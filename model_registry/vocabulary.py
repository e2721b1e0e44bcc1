"""Whether two GGUF models share a vocabulary (a draft model must share its target's).

A draft model's guesses are token ids that the target checks; with another vocabulary the same
id means other text, so every guess would be wrong (or worse, right by accident). The check
is the runner's (``daemon.runners.worker.draft_model``) at load, and this one on the files at
create time: the same token count, the same BOS and EOS ids, and the same text for the first
256 ids and every 997th.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import gguf

from localllm.model_registry.errors import GGUFError

__all__ = ["SAMPLE_HEAD", "SAMPLE_STRIDE", "sampled_ids", "vocabulary_difference"]

SAMPLE_HEAD = 256
SAMPLE_STRIDE = 997


def sampled_ids(n_vocab: int) -> list[int]:
    """The ids whose text two vocabularies must agree on."""
    return sorted({*range(min(SAMPLE_HEAD, n_vocab)), *range(0, n_vocab, SAMPLE_STRIDE)})


@dataclass(frozen=True)
class _Vocabulary:
    count: int
    bos: int | None
    eos: int | None
    texts: dict[int, bytes]  # only the sampled ids


def vocabulary_difference(
    target: str | os.PathLike[str], draft: str | os.PathLike[str]
) -> str | None:
    """How the draft's vocabulary differs from the target's, in words; None when it does not."""
    ours, theirs = _read(target), _read(draft)
    if ours.count != theirs.count:
        return f"{theirs.count} tokens, not {ours.count}"
    for what, a, b in (("BOS", ours.bos, theirs.bos), ("EOS", ours.eos, theirs.eos)):
        if a != b:
            return f"{what} token {b}, not {a}"
    for token, text in ours.texts.items():
        if theirs.texts.get(token) != text:
            return f"token {token} is {theirs.texts.get(token)!r}, not {text!r}"
    return None


def _read(path: str | os.PathLike[str]) -> _Vocabulary:
    try:
        reader = gguf.GGUFReader(path, "r")
    except (ValueError, KeyError, IndexError) as error:
        raise GGUFError(f"cannot read the vocabulary of a GGUF file: {error}") from None
    tokens = reader.fields.get(gguf.Keys.Tokenizer.LIST)
    if tokens is None:
        raise GGUFError("GGUF file has no vocabulary (tokenizer.ggml.tokens)")
    count = len(tokens.data)
    texts = {i: bytes(tokens.parts[tokens.data[i]]) for i in sampled_ids(count)}
    return _Vocabulary(
        count,
        _scalar(reader, gguf.Keys.Tokenizer.BOS_ID),
        _scalar(reader, gguf.Keys.Tokenizer.EOS_ID),
        texts,
    )


def _scalar(reader: gguf.GGUFReader, key: str) -> int | None:
    field = reader.fields.get(key)
    return None if field is None else int(field.parts[field.data[0]][0])
