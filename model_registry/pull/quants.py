"""Choosing which GGUF files of a Hugging Face repository a tag means.

A GGUF repository holds one model in many quantizations, each a single file
(``Model-Q4_K_M.gguf``) or a run of shards (``Model-Q8_0-00001-of-00003.gguf``, often in a
folder per quant), plus maybe a vision projector (``mmproj-*.gguf``). A tag picks one
quantization case-insensitively, by quant (``q4_k_m``) or by file name; ``latest`` picks the
best by :data:`QUANT_PREFERENCE`, as Ollama does for ``hf.co/`` names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from localllm.model_registry.errors import PullError, QuantNotFoundError

__all__ = ["QUANT_PREFERENCE", "GGUFGroup", "Selection", "group_gguf_files", "quant_of", "select"]

#: Best first: a good size/quality balance, then near alternatives, then bigger, then smaller,
#: and unquantized last (they are what a GGUF repo offers for conversion, not for running).
QUANT_PREFERENCE: tuple[str, ...] = (
    "Q4_K_M", "Q4_K_S", "UD-Q4_K_XL", "Q4_K_XL", "Q4_K_L", "Q5_K_M", "Q4_0", "IQ4_XS", "IQ4_NL",
    "Q5_K_S", "UD-Q5_K_XL", "Q5_K_L", "Q5_0", "Q4_1", "Q5_1", "Q6_K", "UD-Q6_K_XL", "Q6_K_L",
    "Q8_0", "UD-Q8_K_XL", "Q3_K_M", "UD-Q3_K_XL", "Q3_K_L", "Q3_K_S", "IQ3_M", "IQ3_S", "IQ3_XS",
    "IQ3_XXS", "Q2_K", "UD-Q2_K_XL", "Q2_K_L", "Q2_K_S", "IQ2_M", "IQ2_S", "IQ2_XS", "IQ2_XXS",
    "UD-IQ1_M", "IQ1_M", "UD-IQ1_S", "IQ1_S", "TQ2_0", "TQ1_0", "MXFP4", "F16", "BF16", "F32",
)  # fmt: skip
_PROJECTOR_PREFERENCE = ("F16", "BF16", "F32", "Q8_0")

_QUANT = re.compile(
    r"(?<![a-z0-9])((?:ud-)?(?:q[2-8]_k(?:_(?:xl|s|m|l))?|q[4-8]_[01](?:_\d_\d)?"
    r"|iq[1-4]_(?:xxs|xs|nl|s|m)|tq[12]_0|mxfp4(?:_moe)?|bf16|fp16|fp32|f16|f32))(?![a-z0-9])",
    re.IGNORECASE,
)
_SHARD = re.compile(r"-(\d{5})-of-(\d{5})$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GGUFGroup:
    """One quantization of the model: a single file or its shards in order."""

    quant: str
    files: tuple[str, ...]
    shard_count: int = 1

    @property
    def complete(self) -> bool:
        return len(self.files) == self.shard_count


@dataclass(frozen=True, slots=True)
class Selection:
    quant: str
    model_files: tuple[str, ...]
    projector: str | None


def quant_of(filename: str) -> str | None:
    """The quantization named in a GGUF file name (``Q4_K_M``), upper-case, or None."""
    stem = _SHARD.sub("", _stem(filename))
    matches = _QUANT.findall(stem)
    if not matches:
        return None
    quant: str = matches[-1].upper()
    return {"FP16": "F16", "FP32": "F32"}.get(quant, quant)


def group_gguf_files(paths: Iterable[str]) -> tuple[list[GGUFGroup], list[str]]:
    """Split a repository listing into model groups (best first) and projector files."""
    shards: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    projectors = []
    for path in paths:
        if not path.lower().endswith(".gguf"):
            continue
        if "mmproj" in PurePosixPath(path).name.lower():
            projectors.append(path)
            continue
        stem = _stem(path)
        match = _SHARD.search(stem)
        index, count = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
        key = (str(PurePosixPath(path).parent), _SHARD.sub("", stem))
        shards.setdefault(key, []).append((index, count, path))
    groups = [
        GGUFGroup(
            quant_of(key[1]) or key[1],
            tuple(path for _, _, path in sorted(members)),
            max(count for _, count, _ in members),
        )
        for key, members in shards.items()
    ]
    groups.sort(key=lambda group: (_rank(group.quant), len(group.files[0]), group.files[0]))
    return groups, sorted(projectors, key=_projector_rank)


def select(paths: Iterable[str], tag: str, repo: str) -> Selection:
    """The files a tag names; :class:`QuantNotFoundError` lists the quants there are."""
    groups, projectors = group_gguf_files(paths)
    if not groups:
        raise PullError(
            f"hf.co/{repo} has no GGUF model files; localllm runs GGUF models "
            "(look for a repository whose name ends in -GGUF)"
        )
    group = groups[0] if tag == "latest" else _find(groups, tag.lower())
    if group is None:
        available = tuple(dict.fromkeys(group.quant for group in groups))
        raise QuantNotFoundError(
            f"hf.co/{repo} has no {tag.upper()} file; available: {', '.join(available)} "
            f"(pull one as hf.co/{repo}:{available[0]})",
            available,
        )
    if not group.complete:
        raise PullError(
            f"hf.co/{repo}: {group.quant} should have {group.shard_count} shards but the "
            f"repository holds {len(group.files)}"
        )
    return Selection(group.quant, group.files, projectors[0] if projectors else None)


def _find(groups: list[GGUFGroup], tag: str) -> GGUFGroup | None:
    for group in groups:
        if tag in (group.quant.lower(), group.quant.lower().removeprefix("ud-")):
            return group
    for group in groups:
        for path in group.files:
            name = PurePosixPath(path).name.lower()
            if tag in (name, _stem(name), _SHARD.sub("", _stem(name))):
                return group
    return None


def _stem(path: str) -> str:
    name = PurePosixPath(path).name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def _rank(quant: str) -> int:
    try:
        return QUANT_PREFERENCE.index(quant)
    except ValueError:
        return len(QUANT_PREFERENCE)


def _projector_rank(path: str) -> tuple[int, str]:
    quant = quant_of(path)
    order = _PROJECTOR_PREFERENCE
    return (order.index(quant) if quant in order else len(order), path)
