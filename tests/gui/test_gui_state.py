"""The Qt-free state: chat list order, downloads, daemon health, fit badges, text helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from localllm.app.gui.markdown_html import MarkdownRenderer, copy_target
from localllm.app.gui.state.chat.conversation_list import ConversationList
from localllm.app.gui.state.chat.records import Conversation
from localllm.app.gui.state.daemon_health import DaemonHealth, DaemonState
from localllm.app.gui.state.downloads import Downloads
from localllm.app.gui.state.fit import Fit, fit_for
from localllm.app.gui.state.records import GpuInfo, PullProgress, PullStatus, SystemInfo
from localllm.app.gui.state.snippets import snippets
from localllm.app.gui.state.starter_models import STARTERS, suggest
from localllm.app.gui.state.units import ago, bytes_text, duration_text

GB = 1_000_000_000


def _chat(id_: str, when: float) -> Conversation:
    return Conversation(id_, id_, created_at=when, updated_at=when)


def test_conversation_list_keeps_most_recent_first_and_reports_rows():
    chats = ConversationList([_chat("a", 1), _chat("b", 3), _chat("c", 2)])
    assert [c.id for c in chats] == ["b", "c", "a"]
    assert chats.add(_chat("d", 4)) == 0
    assert chats.update(_chat("a", 5)) == (3, 0)
    assert [c.id for c in chats] == ["a", "d", "b", "c"]
    assert chats.remove("b") == 2 and chats.get("b") is None


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_downloads_sum_layers_and_estimate_speed_and_time_left():
    clock = Clock()
    downloads = Downloads(clock)
    downloads.on_progress(PullProgress("m", "pulling manifest"))
    downloads.on_progress(PullProgress("m", "pulling a", "sha256:a", 1000, 0))
    downloads.on_progress(PullProgress("m", "pulling b", "sha256:b", 3000, 0))
    clock.now = 1.0
    d = downloads.on_progress(PullProgress("m", "pulling b", "sha256:b", 3000, 1000))
    assert (d.total, d.completed, d.speed) == (4000, 1000, 1000.0)
    assert d.eta == pytest.approx(3.0)
    clock.now = 2.0
    d = downloads.on_progress(PullProgress("m", "pulling b", "sha256:b", 3000, 3000))
    assert 1000 < d.speed < 2000  # smoothed
    d = downloads.on_progress(PullProgress("m", "success"))
    assert (d.state, d.fraction, d.eta) == ("done", 1.0, None)


def test_downloads_adopt_the_daemons_list_and_track_pause():
    downloads = Downloads(Clock())
    downloads.on_snapshot([PullStatus("qwen:7b", "pulling", 100, 40, "paused")])
    [d] = downloads.items()
    assert (d.name, d.state, d.fraction, d.eta, d.active) == ("qwen:7b", "paused", 0.4, None, True)
    downloads.mark("qwen:7b", "failed", "disk full")
    downloads.clear_finished()
    assert downloads.items() == ()


def test_a_queued_pull_is_active_until_it_starts():
    downloads = Downloads(Clock())
    d = downloads.on_progress(PullProgress("m", "queued"))
    assert (d.state, d.active, d.eta) == ("queued", True, None)
    downloads.clear_finished()  # a queued pull is not finished
    assert downloads.on_progress(PullProgress("m", "pulling manifest")).state == "running"
    downloads.on_snapshot([PullStatus("n", "queued", 0, 0, "queued")])
    assert downloads.get("n").active and downloads.on_snapshot([]) == ["n"]


def test_daemon_health_starts_it_once_then_reports_deaths():
    health = DaemonHealth()
    assert health.no_answer() is True
    assert health.status.state is DaemonState.STARTING
    assert health.no_answer() is False  # still starting: keep waiting
    assert health.answered("0.1.0").text() == "Daemon running (v0.1.0)"
    assert health.no_answer() is False
    assert health.status.state is DaemonState.STOPPED and health.status.can_restart
    assert health.restarting().state is DaemonState.STARTING
    failed = health.start_failed("port 11435 in use")
    assert failed.can_restart and "port 11435 in use" in failed.text()


def test_daemon_health_without_autostart_just_reports():
    health = DaemonHealth(autostart=False)
    assert health.no_answer() is False
    assert health.status.state is DaemonState.STOPPED


def test_fit_badges_for_gpu_and_cpu_machines():
    gpu = SystemInfo(16 * GB, 8 * GB, (GpuInfo("RTX", 8 * GB, 7 * GB),))
    cpu = SystemInfo(8 * GB, 4 * GB)
    assert fit_for(4 * GB, gpu) is Fit.VRAM
    assert fit_for(7 * GB, gpu) is Fit.RAM
    assert fit_for(20 * GB, gpu) is Fit.TOO_LARGE
    assert fit_for(4 * GB, cpu) is Fit.RAM
    assert fit_for(4 * GB, None) is Fit.UNKNOWN


def test_starter_suggestions_pick_one_model_that_suits_the_machine():
    small = suggest(SystemInfo(3 * GB, 2 * GB))
    assert [s.model for s in small] == list(STARTERS)
    [pick] = [s for s in small if s.recommended]
    assert pick.model.name == "qwen:0.5b"
    [pick] = [s for s in suggest(SystemInfo(16 * GB, 8 * GB)) if s.recommended]
    assert pick.model.name == "phi4-mini"  # the largest that stays quick on CPU
    gpu = SystemInfo(32 * GB, 8 * GB, (GpuInfo("GPU", 12 * GB, 12 * GB),))
    assert [s.model.name for s in suggest(gpu) if s.recommended] == ["qwen:7b"]


def test_units_read_like_a_person_wrote_them():
    assert bytes_text(512) == "512 B"
    assert bytes_text(4_683_073_184) == "4.7 GB"
    assert duration_text(0.08) == "80 ms"
    assert duration_text(42) == "42 s"
    assert duration_text(4800) == "1 h 20 min"
    assert duration_text(None) == ""
    now = datetime(2026, 5, 1, tzinfo=UTC)
    assert ago(now - timedelta(seconds=5), now) == "just now"
    assert ago(now - timedelta(minutes=1), now) == "1 minute ago"
    assert ago(now - timedelta(days=3), now) == "3 days ago"
    assert ago(now - timedelta(days=90), now) == "2026-01-31"


def test_snippets_use_the_address_model_and_key():
    python, langchain, curl = snippets("http://127.0.0.1:11435", "llama3.2:3b", "sk-x")
    assert 'base_url="http://127.0.0.1:11435/v1"' in python.code
    assert 'model="llama3.2:3b"' in langchain.code
    assert "Authorization: Bearer sk-x" in curl.code
    assert "Authorization" not in snippets("http://h:1")[2].code


def test_markdown_highlights_code_offers_copy_and_refuses_markup():
    rendered = MarkdownRenderer(dark=True).render(
        "Run:\n\n```python\nprint('hi')\n```\n\n<script>x</script> [me](copy:k:0)", key="m1"
    )
    assert rendered.code_blocks == ("print('hi')\n",)
    assert 'href="copy:m1:0"' in rendered.html and "<span style=" in rendered.html
    assert "<script>" not in rendered.html and 'href="copy:k:0"' not in rendered.html
    assert copy_target("copy:m1:0") == ("m1", 0)
    assert copy_target("https://example.org") is None


def test_pulls_that_leave_the_daemons_list_have_finished():
    downloads = Downloads(Clock())
    downloads.on_snapshot(
        [
            PullStatus("a", "pulling", 100, 40, "running"),
            PullStatus("b", "pulling", 100, 10, "running"),
        ]
    )
    assert downloads.on_snapshot([PullStatus("b", "pulling", 100, 20, "running")]) == ["a"]
    assert downloads.get("a").state == "done" and downloads.get("a").fraction == 1.0
    assert downloads.on_snapshot([], watched={"b"}) == []  # ours: its stream will say


def test_imported_files_get_a_valid_default_name():
    from pathlib import Path

    from localllm.app.gui.views.import_dialog import suggested_name

    assert suggested_name(Path("/x/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf")) == (
        "qwen2.5-0.5b-instruct:q4_k_m"
    )
    assert suggested_name(Path("My Model (final).gguf")) == "my-model-final:latest"
    assert suggested_name(Path("tiny-f16.gguf")) == "tiny:f16"
