"""Which cached prefix a sliding-window sequence can resume, and where checkpoints go
(the arithmetic of ``daemon.runners.worker.window``; its effect on the real model is in
test_window_checkpoints)."""

from __future__ import annotations

from localllm.daemon.runners.worker.window import MOST_CHECKPOINTS, Checkpoint, SlidingWindow, reach

N_SWA = 512


def _checkpoints(*tokens: int) -> list[Checkpoint]:
    return [Checkpoint(n, None, 0) for n in tokens]


def test_a_cut_the_window_still_covers_keeps_everything():
    # 1,000 tokens held, window cache from 300: cutting to 812 needs positions 300 on
    assert reach(812, 1000, 300, [], N_SWA) == 812
    assert reach(1000, 1000, 900, [], N_SWA) == 1000  # nothing cut
    assert reach(400, 1000, 0, [], N_SWA) == 400  # the window cache holds it all
    assert reach(400, 1000, 900, [], 0) == 400  # a model without windows


def test_a_cut_past_the_window_resumes_from_the_latest_checkpoint_before_it():
    held = [200, 600, 700, 990]
    assert reach(650, 1000, 300, held, N_SWA) == 600
    assert reach(700, 1000, 300, held, N_SWA) == 700
    assert reach(150, 1000, 300, held, N_SWA) == 0  # none early enough: read it again


def test_checkpoints_go_where_prompts_part_and_before_the_end():
    window = SlidingWindow(None, None, N_SWA, 64, 1 << 30)
    assert window.plan(2000, 0, 900) == [900, 1932, 1996]
    assert window.plan(2000, 1000, 900) == [1932, 1996]  # only where it reads
    assert window.plan(2000, 0, 10) == [1932, 1996]  # less than a batch: read again
    assert window.plan(2000, 0, 1999) == [1932, 1996]  # no room left to read past it
    assert SlidingWindow(None, None, 0, 64, 1 << 30).plan(2000, 0, 900) == []  # no window
    assert SlidingWindow(None, None, N_SWA, 64, 0).plan(2000, 0, 900) == []  # no RAM for them


def test_a_deterministic_runner_takes_them_after_whole_batches_only():
    window = SlidingWindow(None, None, N_SWA, 64, 1 << 30, aligned=True)
    assert window.plan(2000, 0, 900, 130) == [128, 896, 1920, 1984]  # not 130, 900, 1932, 1996
    assert window.plan(2000, 0, 40) == [1920, 1984]  # within the first batch: read again


def test_a_full_list_gives_up_the_checkpoint_closest_to_the_one_before():
    from localllm.daemon.runners.worker.window import _closest

    points = _checkpoints(900, 5000, 5900, 5964, 9000)
    assert _closest(points) == 3  # 5964, 64 past 5900
    assert len(points) == MOST_CHECKPOINTS + 1
    assert _closest(_checkpoints(10, 20, 5000)) == 1  # never the first: where a family parts
    assert _closest(_checkpoints(10)) == 0  # one alone, over the bytes allowed
