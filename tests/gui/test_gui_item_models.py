"""The Qt item models, without widgets, under Qt's own QAbstractItemModelTester."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QPersistentModelIndex, Qt

from localllm.app.gui.item_models.conversations import (
    CONVERSATION_ROLE,
    ConversationFilter,
    ConversationListModel,
)
from localllm.app.gui.item_models.daemon_tables import (
    CatalogTableModel,
    DownloadsModel,
    HubFilesModel,
    InstalledModelsModel,
    RunningModelsModel,
)
from localllm.app.gui.item_models.table import BADGES_ROLE, ITEM_ROLE, SORT_ROLE, TONE_ROLE
from localllm.app.gui.state.chat.conversation_list import ConversationList
from localllm.app.gui.state.chat.records import Conversation
from localllm.app.gui.state.downloads import Download
from localllm.app.gui.state.fit import Fit
from localllm.app.gui.state.records import (
    CatalogModel,
    GpuInfo,
    HubFile,
    InstalledModel,
    RunningModel,
    SystemInfo,
)

GB = 1_000_000_000


def _model(name: str, size: int = GB, **kw) -> InstalledModel:
    return InstalledModel(name, size, None, **kw)


def _rows(model) -> list[str]:
    return [model.index(r, 0).data() for r in range(model.rowCount())]


def test_snapshots_update_rows_in_place_and_keep_the_selection(model_tester):
    table = model_tester(InstalledModelsModel())
    table.replace([_model("a"), _model("b"), _model("c")])
    kept = QPersistentModelIndex(table.index(2, 0))
    removed, inserted, changed = [], [], []
    table.rowsRemoved.connect(lambda _p, first, last: removed.append((first, last)))
    table.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    table.dataChanged.connect(lambda top, _bottom: changed.append(top.row()))

    table.replace([_model("a"), _model("c", 2 * GB), _model("d")])
    assert _rows(table) == ["a", "c", "d"]
    assert (removed, inserted, changed) == ([(1, 1)], [(2, 2)], [1])
    assert kept.isValid() and kept.row() == 1  # "c" is still the same row object
    table.replace([_model("d"), _model("a")])  # reordered: a reset, still valid
    assert _rows(table) == ["d", "a"]
    table.replace([])
    assert table.rowCount() == 0


def test_installed_columns_read_well_and_sort_by_value(model_tester):
    table = model_tester(InstalledModelsModel())
    table.replace(
        [
            _model(
                "qwen:7b",
                4_683_073_184,
                parameter_size="7.6B",
                quantization="Q4_K_M",
                context_length=32768,
            )
        ]
    )
    row = [table.index(0, c).data() for c in range(table.columnCount())]
    assert row[:7] == ["qwen:7b", "4.7 GB", "", "", "7.6B", "Q4_K_M", "32,768"]
    assert table.index(0, 1).data(SORT_ROLE) == 4_683_073_184
    assert table.index(0, 0).data(ITEM_ROLE).name == "qwen:7b"
    assert table.headerData(1, Qt.Orientation.Horizontal) == "Size"
    table.upsert(replace(table.item(0), context_length=4096))
    assert table.index(0, 6).data() == "4,096"
    table.remove("qwen:7b")
    assert table.rowCount() == 0


def test_installed_and_catalog_rows_carry_the_same_badges(model_tester):
    """Whether a model fits this computer, and what it can do beyond chat: for an installed
    model once its details came, for a catalog model from the catalog itself."""
    table = model_tester(InstalledModelsModel())
    eyes = _model("eyes", 2 * GB, capabilities=frozenset({"completion", "vision", "tools"}))
    table.replace([eyes, _model("big", 40 * GB), _model("far", 0, remote="gpu")])
    headers = [table.headerData(c, Qt.Orientation.Horizontal) for c in range(4)]
    assert headers == ["Name", "Size", "Fits", "Can"]
    assert table.index(0, 2).data() == ""  # until the machine is known
    table.set_system(SystemInfo(16 * GB, 8 * GB))
    assert [table.index(r, 2).data() for r in range(3)] == [Fit.RAM.label, "too large", ""]
    assert table.index(1, 2).data(TONE_ROLE) == "warning"
    assert table.index(0, 3).data() == "vision, tools"  # sorted and searched as words
    assert table.index(0, 3).data(BADGES_ROLE) == (("vision", "info"), ("tools", "accent"))
    assert "Sees images" in table.index(0, 3).data(Qt.ItemDataRole.ToolTipRole)
    assert table.index(1, 3).data(BADGES_ROLE) == ()  # not known yet: no badge

    catalog = model_tester(CatalogTableModel())
    qwen = CatalogModel(
        "qwen3:4b", "4B", 2 * GB, "thinks", capabilities=frozenset({"tools", "thinking"})
    )
    catalog.replace([qwen])
    catalog.set_system(SystemInfo(16 * GB, 8 * GB))
    header = [
        catalog.headerData(c, Qt.Orientation.Horizontal) for c in range(catalog.columnCount())
    ]
    fits, can = header.index("Fits"), header.index("Can")
    assert catalog.index(0, fits).data() == Fit.RAM.label
    assert catalog.index(0, can).data(BADGES_ROLE) == (("thinking", "accent"), ("tools", "accent"))


def test_hub_files_show_a_fit_badge_once_the_machine_is_known(model_tester):
    files = model_tester(HubFilesModel())
    files.replace(
        [
            HubFile("m-Q4.gguf", "Q4_K_M", 4 * GB, "hf.co/o/m:Q4_K_M"),
            HubFile("m-F16.gguf", "F16", 15 * GB, "hf.co/o/m:F16"),
        ]
    )
    assert files.index(0, 2).data() == ""
    files.set_system(SystemInfo(16 * GB, 8 * GB, (GpuInfo("GPU", 8 * GB, 8 * GB),)))
    assert [files.index(r, 2).data() for r in range(2)] == [Fit.VRAM.label, Fit.TOO_LARGE.label]
    assert files.index(1, 2).data(TONE_ROLE) == "warning"  # drawn as an amber badge
    assert files.index(0, 2).data(TONE_ROLE) == "success"


def test_running_and_download_tables(model_tester):
    running = model_tester(RunningModelsModel())
    running.replace([RunningModel("qwen:0.5b", GB, 0, None, 4096, "100% CPU")])
    assert running.index(0, 2).data() == "100% CPU"
    downloads = model_tester(DownloadsModel())
    downloads.replace([Download("qwen:7b", "pulling", 4 * GB, GB, "running", 50_000_000)])
    assert downloads.index(0, 1).data() == "1.0 GB of 4.0 GB (25%)"
    assert downloads.index(0, 2).data() == "50.0 MB/s"
    assert downloads.index(0, 3).data() == "1 min"
    assert downloads.index(0, 4).data(TONE_ROLE) == "info"
    imported = Download("gemma3-270m", "success", 253_113_024, 253_113_024, "done", kind="import")
    failed = Download("qwen:0.5b", state="failed", error="could not reach the hub. Retry it.")
    downloads.replace([imported, failed])
    assert downloads.index(0, 1).data() == "imported from a file (253.1 MB), nothing downloaded"
    assert downloads.index(0, 4).data() == "imported"  # not a 253 MB download
    assert downloads.index(1, 1).data() == "could not reach the hub"  # said in place, not blank
    assert downloads.index(1, 4).data(TONE_ROLE) == "danger"


def _chat(id_: str, title: str, when: float) -> Conversation:
    return Conversation(id_, title, created_at=when, updated_at=when)


def test_conversation_list_moves_a_used_chat_to_the_top(model_tester):
    model = model_tester(
        ConversationListModel(
            ConversationList(
                [_chat("a", "Alpha", 1), _chat("b", "Beta", 2), _chat("c", "Gamma", 3)]
            )
        )
    )
    moves = []
    model.rowsMoved.connect(lambda _p, start, _e, _d, dest: moves.append((start, dest)))
    model.update(_chat("a", "Alpha", 9))
    assert _rows(model) == ["Alpha", "Gamma", "Beta"] and moves == [(2, 0)]
    model.update(_chat("a", "Alpha", 0))  # and down again
    assert _rows(model) == ["Gamma", "Beta", "Alpha"]
    model.add(_chat("d", "Delta", 5))
    model.remove("b")
    assert _rows(model) == ["Delta", "Gamma", "Alpha"]
    assert model.index_of("c").row() == 1


def test_renaming_in_place_reports_the_edit(model_tester):
    model = model_tester(ConversationListModel(ConversationList([_chat("a", "Alpha", 1)])))
    edited = []
    model.edited.connect(edited.append)
    assert model.flags(model.index(0, 0)) & Qt.ItemFlag.ItemIsEditable
    assert not model.setData(model.index(0, 0), "   ")
    assert model.setData(model.index(0, 0), "Renamed")
    assert [c.title for c in edited] == ["Renamed"] and _rows(model) == ["Renamed"]


def test_search_filter_matches_titles_and_store_hits(model_tester):
    model = ConversationListModel(
        ConversationList([_chat("a", "Python tips", 1), _chat("b", "Dinner", 2)])
    )
    proxy = model_tester(ConversationFilter())
    proxy.setSourceModel(model)
    proxy.set_query("python")
    assert _rows(proxy) == ["Python tips"]
    proxy.set_query("pasta", {"b"})  # found in the messages by the store
    assert [proxy.index(0, 0).data(CONVERSATION_ROLE).id] == ["b"]
    proxy.set_query("")
    assert proxy.rowCount() == 2
