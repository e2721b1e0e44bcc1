"""Progress bars and the block of progress lines shown during pulls, uploads and creates."""

from __future__ import annotations

import io

from localllm.app.cli.progress import ProgressBoard, RateMeter, render_bar
from localllm.daemon.api import ProgressResponse
from tests.support.polling import wait_for

DIGEST = "sha256:" + "8eeb52dfb3bb" + "0" * 52
PULLING = "pulling 8eeb52dfb3bb"


def test_render_bar_in_progress_has_sizes_speed_and_time_left():
    line = render_bar("pulling 8eeb52dfb3bb...", 1_100_000_000, 4_700_000_000, 40e6, width=100)
    assert line.startswith("pulling 8eeb52dfb3bb...   23% ▕")
    assert line.endswith("▏ 1.1 GB/4.7 GB  40 MB/s  1m30s")
    assert len(line) < 100
    bar = line[line.index("▕") + 1 : line.index("▏")]
    assert 10 <= len(bar) <= 40 and bar.count("█") == int(len(bar) * 0.23)


def test_render_bar_done_shows_only_the_total():
    line = render_bar("pulling 8eeb52dfb3bb...", 68, 68, 1000.0)
    assert line.endswith("100% ▕" + "█" * (line.count("█")) + "▏ 68 B")


def test_render_bar_fits_a_narrow_terminal():
    assert len(render_bar("copying model.gguf", 5, 10, None, width=40)) <= 39


def test_rate_meter_uses_recent_samples():
    meter = RateMeter(window=5)
    assert meter.rate is None
    meter.add(0.0, 1_000_000)  # a resumed pull starts high: the speed ignores that
    meter.add(1.0, 3_000_000)
    assert meter.rate == 2_000_000
    for second in range(2, 20):
        meter.add(float(second), 3_000_000 + (second - 1) * 500_000)
    assert meter.rate == 500_000


def pull_events(total=1000):
    yield ProgressResponse(status="pulling manifest")
    for done in (0, 250, 500, 1000):
        yield ProgressResponse(status=PULLING, digest=DIGEST, total=total, completed=done)
    yield ProgressResponse(status="verifying sha256 digest", digest=DIGEST, total=total)
    yield ProgressResponse(status="writing manifest")
    yield ProgressResponse(status="success")


def test_board_in_a_log_prints_each_line_once():
    stream = io.StringIO()
    board = ProgressBoard(stream, tty=False)
    for event in pull_events():
        board.update(event)
    board.finish()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "pulling manifest"
    assert lines[1].startswith("pulling 8eeb52dfb3bb...  100% ▕") and lines[1].endswith("1 KB")
    assert lines[2:] == ["verifying sha256 digest", "writing manifest", "success"]


def test_board_in_a_log_writes_an_unfinished_bar_at_the_end():
    stream = io.StringIO()
    board = ProgressBoard(stream, tty=False)
    board.update(ProgressResponse(status=PULLING, digest=DIGEST, total=100, completed=40))
    assert stream.getvalue() == ""
    board.finish()
    assert " 40% " in stream.getvalue()


def test_board_on_a_terminal_redraws_in_place():
    stream, now = io.StringIO(), [0.0]
    board = ProgressBoard(stream, tty=True, width=lambda: 80, clock=lambda: now[0])
    for event in pull_events():
        now[0] += 1.0
        board.update(event)
    board.finish()
    out = stream.getvalue()
    assert "\x1b[1F" in out and "\x1b[2K" in out  # went back up and cleared lines
    final = out.rsplit("\x1b[5F", 1)[-1].replace("\x1b[2K", "").splitlines()
    assert final[0] == "pulling manifest" and final[-1] == "success"
    assert "100%" in final[1]
    assert all(len(line) < 80 for line in final)


def test_board_on_a_terminal_throttles_redraws():
    stream = io.StringIO()
    board = ProgressBoard(stream, tty=True, width=lambda: 80, clock=lambda: 5.0)
    board.update(ProgressResponse(status="copying x", total=10_000, completed=0))
    drawn = stream.getvalue()
    for done in range(1, 100):
        board.update(ProgressResponse(status="copying x", total=10_000, completed=done))
    assert stream.getvalue() == drawn  # same instant: no redraw until something settles


def test_spinner_draws_until_stopped_and_erases_itself():
    from localllm.app.cli.progress import Spinner

    stream = io.StringIO()
    spinner = Spinner(stream, interval=0.01).start()
    assert wait_for(lambda: "\r⠙ " in stream.getvalue()), "it drew no second frame"
    spinner.stop()
    text = stream.getvalue()
    assert text.startswith("\r⠋ \r⠙ ") and text.endswith("\r\x1b[K")
    spinner.stop()  # stopping twice is harmless
    assert stream.getvalue() == text
