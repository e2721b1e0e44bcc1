"""Entry point: ``python -m localllm.daemon.speech.worker`` (spec as the first frame)."""

from __future__ import annotations

from ...runners.child_entry import claim_stdout, run_main, serve_child

__all__ = ["main"]


def main() -> int:
    out_fd = claim_stdout()  # and Piper's and onnxruntime's warnings go to the runner log
    from ..frames import CODEC, ReadyEv, SpecOp
    from .loop import Server, say
    from .voice import PiperSpeaker

    def load(request: SpecOp) -> PiperSpeaker:
        say(f"loading {request.spec.model_path} ({request.spec.device})")
        return PiperSpeaker.load(request.spec)

    def ready(speaker: PiperSpeaker) -> ReadyEv:
        info = speaker.describe()
        say(
            f"ready in {info.load_seconds:.2f} s on {info.device}, {info.sample_rate} Hz "
            f"{info.language}, {info.memory_bytes >> 20} MiB"
        )
        return ReadyEv(info)

    return serve_child(out_fd, CODEC, SpecOp, load=load, ready=ready, server=Server, say=say)


if __name__ == "__main__":
    run_main(main)
