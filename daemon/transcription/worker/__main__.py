"""Entry point: ``python -m localllm.daemon.transcription.worker`` (spec as the first frame)."""

from __future__ import annotations

from ...runners.child_entry import claim_stdout, run_main, serve_child

__all__ = ["main"]


def main() -> int:
    out_fd = claim_stdout()  # and faster-whisper's warnings go to the runner log
    from ..frames import CODEC, ReadyEv, SpecOp
    from .loop import Server, say
    from .model import WhisperRunner

    def load(request: SpecOp) -> WhisperRunner:
        spec = request.spec
        say(f"loading {spec.model_path} ({spec.device}, {spec.compute_type})")
        return WhisperRunner.load(spec)

    def ready(runner: WhisperRunner) -> ReadyEv:
        info = runner.describe()
        say(
            f"ready in {info.load_seconds:.2f} s on {info.device} ({info.compute_type}), "
            f"{info.memory_bytes >> 20} MiB"
        )
        return ReadyEv(info)

    return serve_child(out_fd, CODEC, SpecOp, load=load, ready=ready, server=Server, say=say)


if __name__ == "__main__":
    run_main(main)
