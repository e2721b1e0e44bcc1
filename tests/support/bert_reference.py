"""The tiny reranker's score computed in numpy from its GGUF, as an independent reference.

A BERT cross-encoder in a few lines (post-norm layers, GELU, the first token's state through
the ``cls`` head), so a test can check that the runner feeds llama.cpp the right pair of
tokens and reads the right output, not only that it gives the same answer twice.
"""

from __future__ import annotations

import math
from pathlib import Path

import gguf
import numpy as np

__all__ = ["BertReranker"]

_EPS = 1e-5


class BertReranker:
    def __init__(self, path: Path):
        reader = gguf.GGUFReader(path)
        self._w = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
        self._heads = int(reader.fields["bert.attention.head_count"].contents())
        self._layers = int(reader.fields["bert.block_count"].contents())

    def score(self, tokens: list[int]) -> float:
        w = self._w
        x = w["token_embd.weight"][tokens] + w["token_types.weight"][0]
        x = x + w["position_embd.weight"][: len(tokens)]
        x = _norm(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"])
        for bid in range(self._layers):
            x = self._layer(x, f"blk.{bid}")
        pooled = np.tanh(w["cls.weight"] @ x[0] + w["cls.bias"])
        return float((w["cls.output.weight"] @ pooled + w["cls.output.bias"])[0])

    def _layer(self, x: np.ndarray, block: str) -> np.ndarray:
        def dense(name: str, value: np.ndarray) -> np.ndarray:
            return value @ self._w[f"{block}.{name}.weight"].T + self._w[f"{block}.{name}.bias"]

        n, d = x.shape
        size = d // self._heads
        q, k, v = (
            dense(part, x).reshape(n, self._heads, size) for part in ("attn_q", "attn_k", "attn_v")
        )
        scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(size)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        attended = np.einsum("hqk,khd->qhd", weights, v).reshape(n, d)
        x = self._norm(dense("attn_output", attended) + x, block, "attn_output_norm")
        hidden = _gelu(dense("ffn_up", x))
        return self._norm(dense("ffn_down", hidden) + x, block, "layer_output_norm")

    def _norm(self, x: np.ndarray, block: str, name: str) -> np.ndarray:
        return _norm(x, self._w[f"{block}.{name}.weight"], self._w[f"{block}.{name}.bias"])


def _norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    centered = x - x.mean(axis=-1, keepdims=True)
    return centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + _EPS) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """ggml's GELU: the tanh approximation."""
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
