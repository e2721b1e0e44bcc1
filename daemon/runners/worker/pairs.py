"""A reranker's input: one query and one document as the tokens llama.cpp's server makes.

A model with a ``rerank`` prompt in its GGUF (``tokenizer.chat_template.rerank``, as
Qwen3-Reranker has) gets it with ``{query}`` and ``{document}`` filled in. Any other gets
``BOS query EOS SEP document EOS``, each part as the vocabulary's add flags say (XLM-R's
``<s> q </s></s> d </s>``, BERT's ``[CLS] q [SEP] d [SEP]``). Text is tokenized without
parsing special tokens, so a document cannot forge a separator.

A pair longer than the context loses the end of its document (``truncate``), or is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import llama_cpp as lc

from ..types import ContextOverflowError, InvalidRequestError
from .model import Model

__all__ = ["Pair", "PairFormat"]

_TEMPLATE_BYTES = 64 * 1024  # a longer rerank prompt is not one


@dataclass(frozen=True, slots=True)
class Pair:
    tokens: list[int]
    truncated: bool


class PairFormat:
    """How one model's query-document pairs become tokens, and the most a pair may hold."""

    def __init__(self, model: Model, n_ctx: int):
        self._model = model
        self._n_ctx = n_ctx
        vocab = model.vocab
        self._template = _rerank_template(model)
        end = lc.llama_vocab_eos(vocab)
        self._end = end if end != lc.LLAMA_TOKEN_NULL else lc.llama_vocab_sep(vocab)
        self._bos = [lc.llama_vocab_bos(vocab)] if lc.llama_vocab_get_add_bos(vocab) else []
        self._eos = [self._end] if lc.llama_vocab_get_add_eos(vocab) else []
        self._sep = [lc.llama_vocab_sep(vocab)] if lc.llama_vocab_get_add_sep(vocab) else []

    def pair(self, query: str, document: str, truncate: bool) -> Pair:
        if truncate:  # only the start can count: never tokenize more than it
            document = self._model.head(document, self._n_ctx)
        most = None if truncate else self._n_ctx  # refuse a huge text without tokenizing it
        if self._template is not None:
            before, after = self._template.split("{document}", 1)
            before = before.replace("{query}", query)
            after = after.replace("{query}", query)
            whole = self._tokens(before + document + after, special=True, most=most)
            if len(whole) <= self._n_ctx:
                return Pair(whole, False)
            head = self._tokens(before, special=True)
            tail = self._tokens(after, special=True)
        else:
            head = [*self._bos, *self._tokens(query), *self._eos, *self._sep]
            tail = self._eos
        body = self._tokens(document, most=most)
        room = self._n_ctx - len(head) - len(tail)
        if len(body) <= room:
            return Pair([*head, *body, *tail], False)
        if not truncate or room < 1:
            raise ContextOverflowError(len(head) + len(body) + len(tail), self._n_ctx)
        return Pair([*head, *body[:room], *tail], True)

    def _tokens(self, text: str, special: bool = False, most: int | None = None) -> list[int]:
        return self._model.tokenize(text, add_bos=False, special=special, most=most)


def _rerank_template(model: Model) -> str | None:
    """The GGUF's ``rerank`` prompt; it must name where the document goes."""
    raw = lc.llama_model_chat_template(model.handle, b"rerank")
    if not raw:
        return None
    text = raw.decode(errors="replace") if len(raw) <= _TEMPLATE_BYTES else ""
    if "{document}" not in text:
        raise InvalidRequestError("the model's rerank prompt has no {document} in it")
    return text
