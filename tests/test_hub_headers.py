"""A model on a local Hugging Face hub sized from its header alone: range requests that double,
never past the budget, through the puller's connections; the shape read is the shape of the
file read locally; a server that ignores ranges, or drops a connection, is handled."""

from __future__ import annotations

import pytest

from localllm.model_registry.errors import DownloadError, GGUFError
from localllm.model_registry.model_shape import read_model_shape
from localllm.model_registry.pull import Puller
from localllm.model_registry.pull.hub_headers import FIRST_READ, HubShapes
from tests.support.local_hub import LocalHub
from tests.support.model_writers.gemma3 import write_tiny_gemma3
from tests.support.model_writers.projector import write_tiny_projector
from tests.support.pulls import fast_pull_options

REPO = "org/Big-GGUF"
FILE = "Big-F16.gguf"
MIB = 1 << 20


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A Gemma-3-like model with a 262k vocabulary (an 8 MB header in a 40 MB file), and a
    vision projector."""
    folder = tmp_path_factory.mktemp("hub-headers")
    model = write_tiny_gemma3(folder / "big.gguf", vocab_size=262_144)
    return model, write_tiny_projector(folder / "mmproj.gguf")


@pytest.fixture
def hub(files):
    model, projector = files
    with LocalHub() as hub:
        hub.add_repo(REPO, {FILE: model, "mmproj-F16.gguf": projector})
        yield hub


@pytest.fixture
def shapes(store, hub):
    with Puller(store, endpoint=hub.endpoint, options=fast_pull_options()) as puller:
        yield HubShapes(puller)


def test_the_shapes_are_those_of_the_files_read_here(shapes, hub, files):
    model, projector = files
    found = shapes.model(f"hf.co/{REPO}:F16")
    assert found.model == read_model_shape(model)
    assert found.projector == read_model_shape(projector)
    assert found.name_to_pull == f"hf.co/{REPO}:F16"
    assert found.size == model.stat().st_size + projector.stat().st_size
    served = hub.bytes_served(REPO, FILE)
    assert served == 8 * MIB < model.stat().st_size  # 1, 1, 2 and 4 MiB: the header, read whole
    assert hub.blob_requests(REPO, FILE) == 4
    assert shapes.headers_read == 2  # the model's and the projector's


def test_no_more_than_the_budget_is_read(store, hub):
    with Puller(store, endpoint=hub.endpoint) as puller:
        small = HubShapes(puller, budget=3 * MIB)
        with pytest.raises(GGUFError, match=r"on the hub \(3 MiB\)"):
            small.model(f"hf.co/{REPO}:F16")
    assert hub.bytes_served(REPO, FILE) == 3 * MIB  # 1, 1, then up to the budget: no further
    assert small.bytes_read == 3 * MIB


def test_no_more_than_the_models_budget_is_read_of_all_its_files(store, hub):
    with Puller(store, endpoint=hub.endpoint) as puller:
        shapes = HubShapes(puller, model_budget=8 * MIB)  # the model's header: no more
        with pytest.raises(GGUFError, match=r"\(8 MiB for all its files\)"):
            shapes.model(f"hf.co/{REPO}:F16")
    assert hub.bytes_served(REPO, FILE) == 8 * MIB
    assert hub.bytes_served(REPO, "mmproj-F16.gguf") == 0  # nothing left for the projector


def test_a_server_that_ignores_ranges_is_refused_not_read_whole(shapes, hub, files):
    hub.set_fault(REPO, FILE, ignore_range=True, times=None)
    with pytest.raises(DownloadError, match="whole model file"):
        shapes.model(f"hf.co/{REPO}:F16")
    assert shapes.bytes_read == 0


def test_a_dropped_connection_is_tried_again(shapes, hub, files):
    hub.set_fault(REPO, FILE, drop_at=FIRST_READ // 2, times=1)
    assert shapes.model(f"hf.co/{REPO}:F16").model == read_model_shape(files[0])
    assert hub.blob_requests(REPO, FILE) == 5  # the first range twice
