"""A tiny, real vision projector (``mmproj``) GGUF for tests.

llama.cpp's multimodal library (mtmd) loads it next to a tiny model from
:mod:`localllm.model_registry.tiny_gguf` and turns an image into image embeddings: a LLaVA-style
CLIP encoder (one transformer block over 8x8 patches of a 32x32 image) and a two-layer MLP into the
text model's embedding width. The weights are random, so what the model "sees" is noise, but
it is a deterministic function of the image: two different images give different
embeddings, and the same image the same ones.
"""

from __future__ import annotations

import os
from pathlib import Path

import gguf
import numpy as np

__all__ = ["TINY_IMAGE_TOKENS", "save_gguf", "write_tiny_projector"]

_IMAGE_SIZE = 32
_PATCH_SIZE = 8
TINY_IMAGE_TOKENS = (_IMAGE_SIZE // _PATCH_SIZE) ** 2  # embeddings one image becomes
_WIDTH = 32  # the encoder's embedding width
_FFN = 64
_STD = 0.02


def write_tiny_projector(
    path: str | os.PathLike[str], *, text_embedding_length: int = 64, seed: int = 0
) -> Path:
    """Write the projector; ``text_embedding_length`` must match the model's ``n_embd``."""
    writer = gguf.GGUFWriter(None, "clip")
    _add_hyperparameters(writer, text_embedding_length)
    rng = np.random.default_rng(seed)
    for name, shape, fill in _tensor_plan(text_embedding_length):
        writer.add_tensor(name, _values(fill, shape, rng).astype(np.float32))
    return save_gguf(writer, path)


def _add_hyperparameters(writer: gguf.GGUFWriter, text_width: int) -> None:
    writer.add_name("tiny-projector")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_bool(gguf.Keys.Clip.HAS_VISION_ENCODER, True)
    writer.add_bool(gguf.Keys.Clip.HAS_AUDIO_ENCODER, False)
    writer.add_string(gguf.Keys.Clip.PROJECTOR_TYPE, "mlp")  # LLaVA's
    vision = gguf.Keys.ClipVision
    writer.add_uint32(vision.IMAGE_SIZE, _IMAGE_SIZE)
    writer.add_uint32(vision.PATCH_SIZE, _PATCH_SIZE)
    writer.add_uint32(vision.EMBEDDING_LENGTH, _WIDTH)
    writer.add_uint32(vision.FEED_FORWARD_LENGTH, _FFN)
    writer.add_uint32(vision.PROJECTION_DIM, text_width)
    writer.add_uint32(vision.BLOCK_COUNT, 1)
    writer.add_uint32(vision.Attention.HEAD_COUNT, 2)
    writer.add_float32(vision.Attention.LAYERNORM_EPS, 1e-5)
    writer.add_array(vision.IMAGE_MEAN, [0.5, 0.5, 0.5])
    writer.add_array(vision.IMAGE_STD, [0.5, 0.5, 0.5])
    writer.add_bool(vision.USE_GELU, True)


def _values(fill: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if fill == "random":
        return rng.standard_normal(shape) * _STD
    return np.ones(shape) if fill == "one" else np.zeros(shape)


def _tensor_plan(text_width: int) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, numpy shape, fill) for every tensor: random weights, unit norms, zero biases."""
    w, ffn = _WIDTH, _FFN
    plan = [
        ("v.patch_embd.weight", (w, 3, _PATCH_SIZE, _PATCH_SIZE), "random"),
        ("v.class_embd", (w,), "random"),
        ("v.position_embd.weight", (TINY_IMAGE_TOKENS + 1, w), "random"),
        ("v.pre_ln.weight", (w,), "one"),
        ("v.pre_ln.bias", (w,), "zero"),
    ]
    for part in ("attn_q", "attn_k", "attn_v", "attn_out"):
        plan += [
            (f"v.blk.0.{part}.weight", (w, w), "random"),
            (f"v.blk.0.{part}.bias", (w,), "zero"),
        ]
    for norm in ("ln1", "ln2"):
        plan += [(f"v.blk.0.{norm}.weight", (w,), "one"), (f"v.blk.0.{norm}.bias", (w,), "zero")]
    plan += [
        ("v.blk.0.ffn_up.weight", (ffn, w), "random"),
        ("v.blk.0.ffn_up.bias", (ffn,), "zero"),
        ("v.blk.0.ffn_down.weight", (w, ffn), "random"),
        ("v.blk.0.ffn_down.bias", (w,), "zero"),
        ("mm.0.weight", (text_width, w), "random"),  # the MLP into the text model's width
        ("mm.0.bias", (text_width,), "zero"),
        ("mm.2.weight", (text_width, text_width), "random"),
        ("mm.2.bias", (text_width,), "zero"),
    ]
    return plan


def save_gguf(writer: gguf.GGUFWriter, path: str | os.PathLike[str]) -> Path:
    """Write a writer whose tensors are all added (in memory) to ``path``, and close it."""
    path = Path(path)
    try:
        writer.write_header_to_file(path)
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return path
