"""App benchmark: the time of one streaming frame of the transcript at the end of a long chat.

    QT_QPA_PLATFORM=offscreen python bench/transcript_frame_time.py [--messages 1000] [--frames 50]

A chat of ``--messages`` messages (questions, and replies of Markdown paragraphs with a code
block), then a reply streaming at its end: each frame adds a few words to it and redraws, as
the transcript does about 25 times a second. Measured two ways on the same chat and the same
frames, each frame to a fully laid-out document:

* the old way: the whole conversation's HTML set again (``setHtml``), its boxes found again;
* the new way: ``Transcript``'s own redraw, which replaces only the streaming reply's part.

Prints a Markdown table (milliseconds a frame) for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402

from localllm.app.gui.state.chat.records import Message  # noqa: E402
from localllm.app.gui.views.transcript import Transcript  # noqa: E402

_REPLY = (
    "Paragraph {j} of reply {i}: **the answer** with `inline code` and a "
    "[link](https://example.com/{i}) " + "word " * 40
)


def _chat(count: int) -> tuple[Message, ...]:
    messages = []
    for i in range(count // 2):
        messages.append(Message(f"u{i}", "user", f"question {i}: how does this work?"))
        paragraphs = [_REPLY.format(i=i, j=j) for j in range(3)]
        code = f"```python\ndef answer_{i}():\n    return {i}\n```"
        messages.append(Message(f"a{i}", "assistant", "\n\n".join([*paragraphs, code])))
    return tuple(messages)


def _frames(chat: tuple[Message, ...], frames: int) -> list[tuple[Message, ...]]:
    """The chat with its streaming reply, a few words longer each frame."""
    text, shown = "", []
    for n in range(frames):
        text += f"token{n} and some more " + ("\n\n" if n % 8 == 7 else "")
        question = Message("u-last", "user", "and now?")
        shown.append((*chat, question, Message("s", "assistant", text)))
    return shown


def _old_frame(view: Transcript) -> None:
    """What a frame did before: every message's HTML set again."""
    view.setHtml("".join(view._blocks()))
    view._boxes.find(view.document(), view._palette)
    view._finish_layout()


def _new_frame(view: Transcript) -> None:
    view._render()


def _time(app: QApplication, shown, frame: Callable[[Transcript], None]) -> list[float]:
    view = Transcript()
    view.resize(900, 700)
    view.show()
    view.show_messages(shown[0], "tiny", False)  # the chat as it stands, drawn in full
    view.show_messages(shown[0], "tiny", True)
    view._render()
    app.processEvents()
    times = []
    for messages in shown[1:]:
        view.show_messages(messages, "tiny", True)
        view._timer.stop()  # the frame is drawn here, timed, rather than by the timer
        start = time.perf_counter()
        frame(view)
        view.document().documentLayout().documentSize()  # laid out to the end
        app.processEvents()  # and painted
        times.append((time.perf_counter() - start) * 1000)
    view.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--frames", type=int, default=50)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    shown = _frames(_chat(args.messages - 2), args.frames + 1)
    results = {"old: whole chat (setHtml)": _time(app, shown, _old_frame)}
    results["new: the streaming reply only"] = _time(app, shown, _new_frame)
    print(f"{args.messages} messages, {args.frames} streaming frames each\n")
    print("| frame | mean ms | median ms | max ms |")
    print("| --- | --- | --- | --- |")
    for name, times in results.items():
        mean, median = statistics.mean(times), statistics.median(times)
        print(f"| {name} | {mean:.1f} | {median:.1f} | {max(times):.1f} |")
    old, new = (statistics.median(t) for t in results.values())
    print(f"\nmedian speed-up: {old / new:.0f}x")


if __name__ == "__main__":
    main()
