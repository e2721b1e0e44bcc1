"""The token table of the tiny generated models (``tiny_gguf``, and the writers in
tests/support/model_writers): a byte-fallback SentencePiece vocabulary with ChatML's markers,
optionally a thinking style's, fill-in-the-middle's and another family's, padded with letter
pieces to any size (Gemma's 262,144 included), and written as a GGUF tokenizer."""

from __future__ import annotations

import itertools
import string
from collections.abc import Sequence
from dataclasses import dataclass

import gguf

from localllm.model_registry.tiny_thinking import ThinkingStyle, style_tokens

__all__ = ["FIM_TOKENS", "TinyVocabulary", "add_tokenizer", "tiny_vocabulary"]

FIM_TOKENS = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")  # before, after, the gap
_T = gguf.TokenType
_SPACE = "\u2581"  # SentencePiece's visible space
_COMMON_WORDS = (
    *("the", "and", "to", "of", "in", "is", "it", "you", "that", "for", "on", "with"),
    *("are", "this", "be", "as", "have", "not", "was", "at", "or", "but", "a", "I"),
    *("Hello", "hello", "world", "Hi", "hi"),
)
_COMMON_PIECES = ("ing", "ed", "er", "es", "th", "he", "in", "an", "re", "on", "at", "en", "ll")


@dataclass(frozen=True)
class TinyVocabulary:
    """The token table written into a tiny model, with the ids tests care about."""

    tokens: list[str]
    scores: list[float]
    types: list[int]
    unk_id: int
    bos_id: int
    eos_id: int  # ``<|im_end|>``: ends a chat turn and a completion alike
    im_start_id: int
    newline_id: int

    @property
    def quiet_ids(self) -> list[int]:
        """Tokens a default tiny model never samples: control and user-defined tokens (thinking
        markers) and raw bytes but ``\\n``."""
        return [
            i
            for i, kind in enumerate(self.types)
            if kind in (_T.CONTROL, _T.UNKNOWN, _T.UNUSED, _T.USER_DEFINED)
            or (kind == _T.BYTE and i != self.newline_id)
        ]


def tiny_vocabulary(
    vocab_size: int | None = None,
    thinking: ThinkingStyle = "none",
    fill_in_middle: bool = False,
    control_tokens: Sequence[str] = (),
) -> TinyVocabulary:
    """A byte-fallback SentencePiece vocabulary, padded with letter pieces to ``vocab_size``;
    with ``thinking``, that style's marker tokens follow the ChatML ones, with
    ``fill_in_middle`` Qwen2.5-Coder's FIM markers after them, and ``control_tokens`` (another
    family's chat markers, Gemma's ``<start_of_turn>``...) last."""
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    types = [_T.UNKNOWN, _T.CONTROL, _T.CONTROL, *([_T.BYTE] * 256)]
    tokens += ["<|im_start|>", "<|im_end|>"]
    types += [_T.CONTROL, _T.CONTROL]
    markers, control = style_tokens(thinking)
    tokens += markers
    types += [_T.CONTROL if control else _T.USER_DEFINED] * len(markers)
    if fill_in_middle:
        tokens += list(FIM_TOKENS)
        types += [_T.CONTROL] * len(FIM_TOKENS)
    tokens += control_tokens
    types += [_T.CONTROL] * len(control_tokens)
    if len(set(tokens)) != len(tokens):
        raise ValueError("control_tokens must be new tokens, each once")
    pieces = _pieces()
    base = len(tokens) + len(pieces)
    if vocab_size is not None and vocab_size < base:
        raise ValueError(f"vocab_size must be at least {base}")
    pieces += _fillers((vocab_size or base) - base, set(pieces))
    scores = [0.0] * len(tokens) + [-float(i) for i in range(len(pieces))]
    return TinyVocabulary(
        tokens=tokens + pieces,
        scores=scores,
        types=[int(t) for t in types] + [int(_T.NORMAL)] * len(pieces),
        unk_id=0,
        bos_id=1,
        eos_id=tokens.index("<|im_end|>"),
        im_start_id=tokens.index("<|im_start|>"),
        newline_id=tokens.index("<0x0A>"),
    )


def _pieces() -> list[str]:
    """Single characters, then common words closed under prefixes so SPM can merge them."""
    singles = [_SPACE, *(c for c in string.printable[:94])]
    multi: set[str] = set()
    for word in [_SPACE + w for w in _COMMON_WORDS] + list(_COMMON_PIECES):
        multi.update(word[:end] for end in range(2, len(word) + 1))
    return singles + sorted(multi, key=lambda p: (len(p), p))


def _fillers(count: int, taken: set[str]) -> list[str]:
    """``count`` distinct lowercase pieces (``▁ab``, ``ab``, ``▁abc``...), in a fixed order."""
    fillers: list[str] = []
    for length in itertools.count(2):
        for prefix in (_SPACE, ""):
            for letters in itertools.product(string.ascii_lowercase, repeat=length):
                if len(fillers) == count:
                    return fillers
                piece = prefix + "".join(letters)
                if piece not in taken:
                    fillers.append(piece)
    return fillers  # pragma: no cover (itertools.count never ends)


def add_tokenizer(writer: gguf.GGUFWriter, vocab: TinyVocabulary, template: str | None) -> None:
    """The vocabulary as a SentencePiece (``llama``) tokenizer that adds BOS, with its chat
    template."""
    writer.add_tokenizer_model("llama")
    writer.add_token_list(vocab.tokens)
    writer.add_token_scores(vocab.scores)
    writer.add_token_types(vocab.types)
    writer.add_unk_token_id(vocab.unk_id)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(vocab.eos_id)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    if template:
        writer.add_chat_template(template)
    if FIM_TOKENS[0] in vocab.tokens:  # as converters write them (llama.cpp knows them anyway)
        keys = gguf.Keys.Tokenizer.FIM_PRE_ID, gguf.Keys.Tokenizer.FIM_SUF_ID
        for key, token in zip((*keys, gguf.Keys.Tokenizer.FIM_MID_ID), FIM_TOKENS, strict=True):
            writer.add_uint32(key, vocab.tokens.index(token))
