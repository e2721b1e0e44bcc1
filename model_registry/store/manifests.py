"""Manifests: the Docker-v2/OCI-style JSON that names a model's blobs.

A manifest is parsed strictly (every digest validated, every media type known) because its
contents choose which files the daemon opens; a tampered manifest must not reach a path.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import StrEnum

from localllm.model_registry.digests import Digest, sha256_of_bytes
from localllm.model_registry.errors import CorruptManifestError, InvalidDigestError
from localllm.model_registry.store.file_names import check_file_name, check_unique_file_names

__all__ = ["CONFIG_MEDIA_TYPE", "MANIFEST_MEDIA_TYPE", "BlobRef", "Layer", "LayerType", "Manifest"]

MANIFEST_MEDIA_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_MEDIA_TYPE = "application/vnd.docker.container.image.v1+json"
_MAX_MANIFEST_BYTES = 1 << 20
_MAX_LAYERS = 1024
_SCALE = "org.localllm.adapter.scale"  # the annotation that holds an adapter layer's scale
_TITLE = "org.opencontainers.image.title"  # the OCI annotation for a layer's file name


class LayerType(StrEnum):
    """What a layer holds; the value is its media type."""

    MODEL = "application/vnd.localllm.image.model"
    PROJECTOR = "application/vnd.localllm.image.projector"
    ADAPTER = "application/vnd.localllm.image.adapter"
    DRAFT = "application/vnd.localllm.image.draft"  # a draft model's weights (speculative)
    TEMPLATE = "application/vnd.localllm.image.template"
    SYSTEM = "application/vnd.localllm.image.system"
    PARAMS = "application/vnd.localllm.image.params"
    MESSAGES = "application/vnd.localllm.image.messages"
    LICENSE = "application/vnd.localllm.image.license"
    # one file of a transcription model's folder (Whisper in CTranslate2 form), kept with its
    # file name: the runner reads the folder, not single files
    CT2 = "application/vnd.localllm.image.ct2"
    # one file of a Piper voice (``<voice>.onnx`` and ``<voice>.onnx.json``), kept with its
    # file name as a CT2 layer is: its speech runner reads the folder
    VOICE = "application/vnd.localllm.image.voice"

    @property
    def short(self) -> str:
        return self.value.rsplit(".", 1)[-1]

    @property
    def names_its_file(self) -> bool:
        """Whether a layer of this type is one file of a model's folder, kept with its name."""
        return self in (LayerType.CT2, LayerType.VOICE)


@dataclass(frozen=True, slots=True)
class BlobRef:
    """The manifest's reference to its config blob."""

    digest: Digest
    size: int


@dataclass(frozen=True, slots=True)
class Layer:
    media_type: LayerType
    digest: Digest
    size: int
    scale: float = 1.0  # an adapter's LoRA scale; kept as an OCI annotation when not 1
    file_name: str | None = None  # a CT2 or voice layer's file name in its folder (only theirs)

    def __post_init__(self) -> None:
        if self.media_type.names_its_file:
            check_file_name(self.file_name)
        elif self.file_name is not None:
            raise CorruptManifestError(f"a {self.media_type.short} layer names no file")

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "mediaType": self.media_type.value,
            "digest": self.digest.wire,
            "size": self.size,
        }
        annotations = {}
        if self.scale != 1.0:
            annotations[_SCALE] = repr(float(self.scale))
        if self.file_name is not None:
            annotations[_TITLE] = self.file_name
        if annotations:
            data["annotations"] = annotations
        return data

    @classmethod
    def from_json(cls, data: object) -> Layer:
        if not isinstance(data, dict):
            raise CorruptManifestError("manifest layer is not an object")
        try:
            media_type = LayerType(data["mediaType"])
            digest = Digest.parse(data["digest"])
            size = data["size"]
        except (KeyError, ValueError, InvalidDigestError) as error:
            raise CorruptManifestError(f"manifest layer is invalid: {error}") from None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise CorruptManifestError("manifest layer has an invalid size")
        annotations = data.get("annotations")
        file_name = _title(annotations) if media_type.names_its_file else None
        return cls(media_type, digest, size, _scale(annotations), file_name)


@dataclass(frozen=True, slots=True)
class Manifest:
    config: BlobRef
    layers: tuple[Layer, ...]

    def __post_init__(self) -> None:
        check_unique_file_names(layer.file_name for layer in self.layers if layer.file_name)

    @property
    def is_transcription(self) -> bool:
        """A transcription model (Whisper in CTranslate2 form): its files make a folder, and
        no GGUF is there to load for generation or embedding."""
        return bool(self.layers_of(LayerType.CT2))

    @property
    def is_voice(self) -> bool:
        """A Piper voice (text to speech): its two files make a folder, as a transcription
        model's do, and no GGUF is there either."""
        return bool(self.layers_of(LayerType.VOICE))

    @property
    def folder_layers(self) -> tuple[Layer, ...]:
        """The layers that are files of the model's folder (a transcription model's or a
        voice's); none for a GGUF model."""
        return tuple(layer for layer in self.layers if layer.media_type.names_its_file)

    def layers_of(self, media_type: LayerType) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if layer.media_type is media_type)

    @property
    def digests(self) -> set[Digest]:
        """Every blob this manifest keeps alive, config included."""
        return {self.config.digest, *(layer.digest for layer in self.layers)}

    @property
    def total_size(self) -> int:
        return self.config.size + sum(layer.size for layer in self.layers)

    def to_bytes(self) -> bytes:
        document = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {
                "mediaType": CONFIG_MEDIA_TYPE,
                "digest": self.config.digest.wire,
                "size": self.config.size,
            },
            "layers": [layer.to_json() for layer in self.layers],
        }
        return json.dumps(document, indent=2).encode()

    @property
    def model_id(self) -> Digest:
        """The model's id: the sha256 of its manifest bytes."""
        return sha256_of_bytes(self.to_bytes())

    @classmethod
    def from_bytes(cls, raw: bytes) -> Manifest:
        if len(raw) > _MAX_MANIFEST_BYTES:
            raise CorruptManifestError("manifest is too large")
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise CorruptManifestError("manifest is not valid JSON") from None
        if not isinstance(document, dict) or document.get("schemaVersion") != 2:
            raise CorruptManifestError("manifest has an unknown schema")
        config = _parse_config(document.get("config"))
        layers = document.get("layers")
        if not isinstance(layers, list) or len(layers) > _MAX_LAYERS:
            raise CorruptManifestError("manifest layers are missing or too many")
        return cls(config, tuple(Layer.from_json(layer) for layer in layers))


def _parse_config(data: object) -> BlobRef:
    if not isinstance(data, dict) or data.get("mediaType") != CONFIG_MEDIA_TYPE:
        raise CorruptManifestError("manifest config is missing")
    try:
        return BlobRef(Digest.parse(data.get("digest")), _size(data.get("size")))
    except InvalidDigestError:
        raise CorruptManifestError("manifest config digest is invalid") from None


def _scale(annotations: object) -> float:
    """The adapter scale annotation (1 without one); other annotations are not ours to judge."""
    if not isinstance(annotations, dict) or _SCALE not in annotations:
        return 1.0
    text = annotations[_SCALE]
    try:
        scale = float(text) if isinstance(text, str) else math.nan
    except ValueError:
        scale = math.nan
    if not math.isfinite(scale):
        raise CorruptManifestError("manifest layer has an invalid adapter scale")
    return scale


def _title(annotations: object) -> str:
    """A folder layer's file name (required, checked: it becomes a path in the model's folder)."""
    if not isinstance(annotations, dict) or _TITLE not in annotations:
        raise CorruptManifestError("a model file layer has no file name")
    return check_file_name(annotations[_TITLE])


def _size(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CorruptManifestError("manifest config has an invalid size")
    return value
