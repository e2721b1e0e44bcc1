"""Helpers for store tests: build small models straight from bytes (no GGUF needed)."""

from __future__ import annotations

import json

from localllm.model_registry.digests import Digest
from localllm.model_registry.store import BlobRef, Layer, LayerType, Manifest, Store


def put_model(store: Store, name: str, *payloads: bytes) -> Manifest:
    """Write one model layer per payload plus a config blob, manifest last."""
    with store.lease() as lease:
        layers = []
        for payload in payloads:
            blob = store.blobs.write_bytes(payload, on_hashed=lease.add)
            layers.append(Layer(LayerType.MODEL, blob.digest, blob.size))
        config = store.blobs.write_bytes(json.dumps({"name": name}).encode(), on_hashed=lease.add)
        manifest = Manifest(BlobRef(config.digest, config.size), tuple(layers))
        store.write_manifest(name, manifest)
    return manifest


def assert_store_consistent(store: Store) -> None:
    """Every listed model is complete and every blob holds the bytes its name promises."""
    report = store.verify()
    assert report.ok, report
    for entry in store.list_models():
        for digest in entry.manifest.digests:
            assert store.blobs.exists(digest), (entry.name, digest)
    for path in store.layout.blobs_dir.iterdir():
        if path.name.startswith("sha256-") and "." not in path.name:
            Digest.parse(path.name)
