"""``DRAFT`` in the model registry: an installed model's weights (shared) or a file (a layer of
its own), checked to share the vocabulary before anything is stored, reaching the load target."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.resolve import resolve_model, with_draft
from localllm.model_registry.errors import ModelfileError
from localllm.model_registry.importer import create_from_modelfile
from localllm.model_registry.modelfile import parse_modelfile
from localllm.model_registry.store import LayerType
from localllm.model_registry.tiny_gguf import write_tiny_model
from localllm.model_registry.tiny_vocabulary import tiny_vocabulary
from localllm.model_registry.vocabulary import sampled_ids, vocabulary_difference
from tests.support.store import assert_store_consistent


def store_files(store) -> list[str]:
    return sorted(str(p.relative_to(store.root)) for p in store.root.rglob("*") if p.is_file())


@pytest.fixture
def models(tmp_path, imported_store):
    """``tiny`` in the store, and beside it on disk a same-vocabulary draft and a foreign one."""
    tokens = len(tiny_vocabulary().tokens)
    small = write_tiny_model(tmp_path / "small.gguf", seed=9, n_layer=1)
    foreign = write_tiny_model(tmp_path / "foreign.gguf", seed=3, vocab_size=tokens + 40)
    return {"small": small, "foreign": foreign}


def create(store, name: str, text: str, folder: Path) -> None:
    create_from_modelfile(store, name, parse_modelfile(text), lambda ref: folder / ref)


def test_a_draft_by_name_shares_the_installed_weights(imported_store, models, tmp_path):
    create(imported_store, "small", "FROM ./small.gguf\n", tmp_path)
    create(imported_store, "drafted", "FROM tiny\nDRAFT small\n", tmp_path)
    drafts = imported_store.read_manifest("drafted").layers_of(LayerType.DRAFT)
    weights = imported_store.read_manifest("small").layers_of(LayerType.MODEL)
    assert [layer.digest for layer in drafts] == [layer.digest for layer in weights]
    target = resolve_model(imported_store, "drafted").target
    assert target.draft_name == "small"
    assert target.draft_paths == (str(imported_store.blobs.path(weights[0].digest)),)
    assert resolve_model(imported_store, "tiny").target.draft_paths == ()
    # derived models keep the draft; a new DRAFT replaces it
    create(imported_store, "child", "FROM drafted\nSYSTEM x\n", tmp_path)
    assert resolve_model(imported_store, "child").target.draft_paths == target.draft_paths
    create(imported_store, "other", "FROM drafted\nDRAFT tiny\n", tmp_path)
    other = resolve_model(imported_store, "other").target
    assert other.draft_name == "tiny" and other.draft_paths == other.model_paths
    assert_store_consistent(imported_store)


def test_a_draft_file_is_imported_as_a_layer(imported_store, models, tmp_path):
    shutil.copy(models["small"], tmp_path / "draft here.gguf")
    create(imported_store, "drafted", 'FROM tiny\nDRAFT "./draft here.gguf"\n', tmp_path)
    (layer,) = imported_store.read_manifest("drafted").layers_of(LayerType.DRAFT)
    assert imported_store.blobs.path(layer.digest).read_bytes() == models["small"].read_bytes()
    assert resolve_model(imported_store, "drafted").target.draft_name == "draft here.gguf"
    assert_store_consistent(imported_store)


@pytest.mark.parametrize("draft", ["foreign", "./foreign.gguf"])
def test_a_draft_of_another_vocabulary_is_refused_and_nothing_is_stored(
    imported_store, models, tmp_path, draft
):
    create(imported_store, "foreign", "FROM ./foreign.gguf\n", tmp_path)
    before = store_files(imported_store)
    shown = draft.removeprefix("./")
    with pytest.raises(ModelfileError) as caught:
        create(imported_store, "bad", f"FROM tiny\nDRAFT {draft}\n", tmp_path)
    message = str(caught.value)
    assert f"DRAFT {shown} does not share the vocabulary of tiny" in message
    assert str(tmp_path) not in message
    assert store_files(imported_store) == before


def test_a_missing_draft_model_is_a_clear_error(imported_store, tmp_path):
    with pytest.raises(ModelfileError, match="DRAFT nowhere: no such model; pull it first"):
        create(imported_store, "bad", "FROM tiny\nDRAFT nowhere\n", tmp_path)


def test_vocabulary_difference_names_what_differs(models, tiny_model_path, tmp_path):
    assert vocabulary_difference(tiny_model_path, models["small"]) is None
    tokens = len(tiny_vocabulary().tokens)
    assert vocabulary_difference(tiny_model_path, models["foreign"]) == (
        f"{tokens + 40} tokens, not {tokens}"
    )
    assert sampled_ids(3000) == [*range(256), 997, 1994, 2991]


def test_the_draft_option_resolves_an_installed_model(imported_store, models, tmp_path):
    create(imported_store, "small", "FROM ./small.gguf\n", tmp_path)
    target = resolve_model(imported_store, "tiny").target
    assert with_draft(imported_store, target, None) is target
    drafted = with_draft(imported_store, target, "small")
    assert drafted.draft_name == "small"
    assert drafted.draft_paths == resolve_model(imported_store, "small").target.model_paths
    with pytest.raises(BadRequestError, match="draft model 'nowhere' is not installed"):
        with_draft(imported_store, target, "nowhere")
    with pytest.raises(BadRequestError, match="draft must be the name of an installed model"):
        with_draft(imported_store, target, 3)


def test_the_plan_counts_the_drafts_own_cache(imported_store, models, tmp_path):
    """The draft has a context as large as the model's: the plan of a drafted model is the
    plain model's plus a draft part, planned from the draft's own header (its layers and
    widths), that grows with the context by at least the draft's K and V for the added cells,
    whether the draft comes from the Modelfile or the request. (The draft part's exact figures
    are ``test_memory_plan``'s.)"""
    import asyncio

    from localllm.daemon.scheduler.planner import MemoryPlanner
    from tests.support.runner import make_spec

    create(imported_store, "small", "FROM ./small.gguf\n", tmp_path)
    create(imported_store, "drafted", "FROM tiny\nDRAFT small\n", tmp_path)
    plain = resolve_model(imported_store, "tiny").target
    by_modelfile = resolve_model(imported_store, "drafted").target
    by_option = with_draft(imported_store, plain, "small")
    planner = MemoryPlanner(repack_types=frozenset())

    def plan(target, num_ctx: int = 4096):
        shapes = asyncio.run(planner.shapes(target))
        spec = make_spec(tuple(target.model_paths), num_ctx=num_ctx, num_parallel=4)
        return shapes, planner.plan(shapes, spec)[0]

    _, alone = plan(plain)
    shapes, drafted = plan(by_modelfile)
    assert shapes.draft is not None and shapes.draft.n_layer == 1  # the draft's own header
    assert alone.kind_bytes("draft") == 0 and drafted.kind_bytes("draft") > 0
    assert drafted.total() - drafted.kind_bytes("draft") == alone.total()
    assert plan(by_option)[1].parts == drafted.parts
    _, longer = plan(by_modelfile, num_ctx=8192)
    per_cell = sum(sum(shapes.draft.kv_widths(i)) * 2 for i in range(shapes.draft.n_layer))
    assert longer.kind_bytes("draft") - drafted.kind_bytes("draft") >= per_cell * 4096 * 4
    # the store's summary, which stands in where a header cannot be read, has both models
    footprint = by_option.footprint
    small = resolve_model(imported_store, "small").target.footprint
    assert footprint.weights_bytes == plain.footprint.weights_bytes + small.weights_bytes
    assert by_modelfile.footprint.draft is not None
    assert by_modelfile.footprint.draft.n_layer == 1


def test_a_plan_from_the_stores_summary_counts_the_drafts_weights_once(
    imported_store, models, tmp_path
):
    """Where the model's header cannot be read, its plan comes from the store's summary, whose
    weights count the draft's files too: the model's weights are its own files, and the draft
    is planned apart from its header, or from its own summary where that cannot be read either
    (likewise where only the draft's header cannot be read), by Modelfile or by request."""
    import asyncio

    from localllm.daemon.scheduler import TargetShapes
    from localllm.daemon.scheduler.memory import footprint_shape
    from localllm.daemon.scheduler.planner import MemoryPlanner
    from tests.support.runner import make_spec

    create(imported_store, "small", "FROM ./small.gguf\n", tmp_path)
    create(imported_store, "drafted", "FROM tiny\nDRAFT small\n", tmp_path)
    plain = resolve_model(imported_store, "tiny").target
    small = resolve_model(imported_store, "small").target.footprint
    unreadable = tmp_path / "unreadable.gguf"
    unreadable.write_bytes(b"not a GGUF file")
    planner = MemoryPlanner(repack_types=frozenset())
    spec = make_spec(plain.model_paths, num_ctx=4096, num_parallel=4)

    def plan(target):
        return planner.plan(asyncio.run(planner.shapes(target)), spec)[0]

    def from_summaries(model):
        return planner.plan(TargetShapes(model, footprint_shape(small)), spec)[0]

    by_modelfile = resolve_model(imported_store, "drafted").target
    read = plan(by_modelfile)  # every header read
    files = plain.footprint.weights_bytes + small.weights_bytes  # what resolve reports
    for drafted in (by_modelfile, with_draft(imported_store, plain, "small")):
        assert drafted.footprint.weights_bytes == files
        no_model = replace(drafted, model_paths=(str(unreadable),))
        planned = plan(no_model)
        assert planned.kind_bytes("weights") == plain.footprint.weights_bytes
        assert planned.kind_bytes("draft") == read.kind_bytes("draft")
        neither = plan(replace(no_model, draft_paths=(str(unreadable),)))
        summaries = from_summaries(footprint_shape(plain.footprint))
        assert neither.kind_bytes("weights") == plain.footprint.weights_bytes
        assert neither.parts == summaries.parts  # the draft's weights in its part, not 0
        no_draft = plan(replace(drafted, draft_paths=(str(unreadable),)))
        assert no_draft.kind_bytes("weights") == read.kind_bytes("weights")
        assert no_draft.kind_bytes("draft") == summaries.kind_bytes("draft")
