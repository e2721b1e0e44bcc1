"""Which runner a request asks for, and whether a loaded model is that runner: a request
reuses a loaded model when it asks for what loaded it, or leaves to placement what placement
chose; anything else reloads the model with the new options."""

from __future__ import annotations

from dataclasses import replace

from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler.loaded import LoadedModel, LoadTarget, RunnerOptions
from localllm.daemon.scheduler.loader import AUTO_CPU_MOE, AUTO_GPU_LAYERS

__all__ = ["runner_spec", "suits"]


def runner_spec(target: LoadTarget, options: RunnerOptions) -> RunnerSpec:
    """The runner a request for ``target`` with ``options`` asks for (GPU layers and experts
    in RAM left to placement unless asked)."""
    return RunnerSpec(
        model_name=target.name,
        model_paths=target.model_paths,
        projector_path=target.projector_path,
        adapters=target.adapters,
        num_ctx=options.num_ctx,
        num_parallel=options.num_parallel,
        num_gpu_layers=AUTO_GPU_LAYERS if options.num_gpu is None else options.num_gpu,
        num_cpu_moe=AUTO_CPU_MOE if options.num_cpu_moe is None else options.num_cpu_moe,
        num_threads=options.num_threads,
        num_batch=options.num_batch,
        num_draft=options.num_draft,
        draft_name=target.draft_name,
        draft_paths=target.draft_paths,
        embedding_only=target.embedding_only,
        kv_cache_type=options.kv_cache_type,
        flash_attention=options.flash_attention,
        backend_sampling=options.backend_sampling,
        host_cache_bytes=options.host_cache_bytes,
        # on disk, so no part of the memory plan; an embedding model keeps no prompts
        prompt_cache_dir=None if target.embedding_only else options.prompt_cache_dir,
        prompt_cache_bytes=0 if target.embedding_only else options.prompt_cache_bytes,
        deterministic=options.deterministic,
    )


def suits(model: LoadedModel, wanted: RunnerSpec) -> bool:
    """Equal for reuse: the same request as the one that loaded it (placement may have changed
    its GPU layers, e.g. ``num_gpu: -1`` on a CPU build), or an automatic GPU choice that
    matches whatever was placed. Comparing with the placed spec alone would reload forever."""
    if model.requested == wanted:
        return True
    if wanted.num_gpu_layers == AUTO_GPU_LAYERS:
        wanted = replace(wanted, num_gpu_layers=model.spec.num_gpu_layers)
    if wanted.num_cpu_moe == AUTO_CPU_MOE:
        wanted = replace(wanted, num_cpu_moe=model.spec.num_cpu_moe)
    return model.spec == wanted
