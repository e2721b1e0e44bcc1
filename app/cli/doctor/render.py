"""The doctor's report as a table for people and as JSON for scripts.

Pure functions of a :class:`~app.cli.doctor.report.Report` and its findings; the JSON keeps
exact numbers (bytes) and raw strings, the table rounds and shortens them.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from localllm.app.cli.doctor.report import (
    DaemonState,
    Finding,
    Gpu,
    LlamaBuild,
    Report,
    StoreState,
    store_agrees,
)
from localllm.app.cli.formatting import format_size

__all__ = ["feature_summary", "render_table", "to_json"]

Rows = list[tuple[str, str]]


def to_json(report: Report, found: list[Finding]) -> dict[str, Any]:
    data = asdict(report)
    data["store"]["path"] = str(report.store.path)
    data["dirs"] = {name: str(path) for name, path in report.dirs.items()}
    data["daemon"]["store_agrees"] = store_agrees(report)
    data["findings"] = [asdict(finding) for finding in found]
    data["ok"] = not any(finding.level == "error" for finding in found)
    return data


def render_table(report: Report, found: list[Finding]) -> str:
    sections: list[tuple[str, Rows]] = [
        ("localllm", [("version", report.version), ("platform", report.platform)]),
        ("llama.cpp", _llama_rows(report.llama)),
        ("GPU", _gpu_rows(report.gpus)),
        ("memory", [(k, format_size(v)) for k, v in asdict(report.memory).items()]),
        ("model store", _store_rows(report.store)),
        ("folders", [(name, str(path)) for name, path in report.dirs.items()]),
        ("daemon", _daemon_rows(report.daemon, store_agrees(report))),
    ]
    width = max(len(key) for _, rows in sections for key, _ in rows) + 3
    lines = []
    for title, rows in sections:
        lines.append(title.upper())
        lines += [f"  {key.ljust(width)}{value}" for key, value in rows]
    lines.append("")
    lines += [f"{finding.level}: {finding.message}" for finding in found]
    errors = sum(finding.level == "error" for finding in found)
    lines.append(f"{errors} problem{'' if errors == 1 else 's'} found" if errors else "all good")
    return "\n".join(lines)


def feature_summary(system_info: str) -> str:
    """``CPU : AVX = 1 | AVX2 = 1 | F16C = 0 |`` -> ``CPU: AVX AVX2`` (what is switched on)."""
    groups: list[str] = []
    for piece in system_info.split("|"):
        name, _, value = piece.partition("=")
        if ":" in name:  # the next backend: "CPU : SSE3"
            group, _, name = name.partition(":")
            groups.append(f"{group.strip()}:")
        if name.strip() and value.strip() not in ("0", ""):
            if not groups:
                groups.append("")
            groups[-1] += f" {name.strip()}"
    return "; ".join(group.strip() for group in groups) or system_info


def _llama_rows(llama: LlamaBuild) -> Rows:
    if llama.error:
        return [("status", f"does not load: {llama.error}")]
    offload = "GPU offload" if llama.supports_gpu_offload else "no GPU offload"
    return [
        ("llama-cpp-python", llama.version or "unknown"),
        ("backend", f"{llama.backend or 'unknown'} ({offload})"),
        ("features", feature_summary(llama.system_info or "") or "-"),
        ("library", llama.library_dir or "-"),
        ("self-test", _self_test(llama)),
    ]


def _self_test(llama: LlamaBuild) -> str:
    if llama.runs_here is None:
        return "not run"
    if llama.runs_here:
        return "passed (Q8_0 and Q4_0 models: a batch, generation, embeddings)"
    how = f"killed by {llama.exit_signal}" if llama.exit_signal else "failed"
    return f"FAILED: {how} ({llama.failed_step})"


def _gpu_rows(gpus: tuple[Gpu, ...]) -> Rows:
    if not gpus:
        return [("none found", "models run on the CPU")]
    rows = []
    for gpu in gpus:
        if gpu.memory_total is None:
            rows.append((gpu.name, "shares the computer's memory"))
            continue
        text = f"{format_size(gpu.memory_total)} ({format_size(gpu.memory_free)} free)"
        rows.append((gpu.name, text + (f", driver {gpu.driver}" if gpu.driver else "")))
    return rows


def _store_rows(store: StoreState) -> Rows:
    path = str(store.path) + ("" if store.exists else " (not created yet)")
    if store.disk_free is None:
        return [("models", path), ("disk", "unknown")]
    disk = f"{format_size(store.disk_free)} free of {format_size(store.disk_total)}"
    return [("models", path), ("disk", disk)]


def _daemon_rows(daemon: DaemonState, agrees: bool | None) -> Rows:
    rows = [("address", daemon.url)]
    if daemon.error:
        return [*rows, ("status", "a problem (below)")]
    if not daemon.running:
        hint = "any command starts it; `localllm serve` runs it in the foreground"
        rows.append(("status", f"not running ({hint})" if daemon.local else "not reachable"))
        return rows
    rows.append(("status", f"running, version {daemon.version or 'unknown'}"))
    if not daemon.local:
        store = "on another computer"
    elif agrees is None:
        store = "unknown (this daemon does not report its store)"
    else:
        store = "the same as this shell's" if agrees else f"DIFFERENT: {daemon.models_dir}"
    rows.append(("model store", store))
    return rows
