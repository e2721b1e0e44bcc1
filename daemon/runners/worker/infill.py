"""Fill in the middle: the prompt a code model completes between a prefix and a suffix.

Built as llama-server's ``/infill`` builds it, in prefix-suffix-middle order: ``[BOS] FIM_PRE
prefix FIM_SUF suffix FIM_MID``, and the model writes what goes in the gap. llama.cpp knows a
vocabulary's three markers from its GGUF keys or their usual spellings (``<|fim_prefix|>``,
``<PRE>``, ``<fim_prefix>``...). The texts are tokenized without parsing special tokens, so
code that spells a marker cannot move the gap.
"""

from __future__ import annotations

import llama_cpp as lc

from ..types import InvalidRequestError
from .model import Model

__all__ = ["infill_tokens"]


def infill_tokens(model: Model, prefix: str, suffix: str, add_bos: bool, most: int) -> list[int]:
    """The FIM prompt's tokens; a model without the markers is the request's error."""
    vocab = model.vocab
    markers = (lc.llama_vocab_fim_pre, lc.llama_vocab_fim_suf, lc.llama_vocab_fim_mid)
    pre, suf, mid = (marker(vocab) for marker in markers)
    if lc.LLAMA_TOKEN_NULL in (pre, suf, mid):
        raise InvalidRequestError(
            f"{model.spec.model_name} cannot fill in the middle: its vocabulary has no FIM "
            "tokens. Send the prompt without a suffix, or use a code model that has them "
            "(Qwen2.5-Coder, CodeLlama, StarCoder2, DeepSeek-Coder...)"
        )
    bos = model.tokenize("", add_bos, special=False)  # [BOS] where the vocabulary adds one
    before = model.tokenize(prefix, add_bos=False, special=False, most=most)
    after = model.tokenize(suffix, add_bos=False, special=False, most=most)
    return [*bos, pre, *before, suf, *after, mid]
