"""The content-addressed model store (blobs + manifests)."""

from localllm.model_registry.store.blobs import BlobFile, BlobStore, ensure_free_space
from localllm.model_registry.store.details import ModelDetails, show_model
from localllm.model_registry.store.layout import StoreLayout
from localllm.model_registry.store.manifests import BlobRef, Layer, LayerType, Manifest
from localllm.model_registry.store.store import (
    ModelEntry,
    PruneReport,
    RemoveReport,
    Store,
    VerifyReport,
)

__all__ = [
    "BlobFile",
    "BlobRef",
    "BlobStore",
    "Layer",
    "LayerType",
    "Manifest",
    "ModelDetails",
    "ModelEntry",
    "PruneReport",
    "RemoveReport",
    "Store",
    "StoreLayout",
    "VerifyReport",
    "ensure_free_space",
    "show_model",
]
