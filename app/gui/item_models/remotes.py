"""The Server page's table of remotes: one row per remote engine, with the reason when it is
unreachable in the Health column (and every replica's state in its tooltip)."""

from __future__ import annotations

from localllm.app.gui.item_models.table import Column, RecordTableModel
from localllm.app.gui.state.remotes import RemoteStatus

__all__ = ["RemotesModel"]


def _replicas_tip(remote: RemoteStatus) -> str:
    lines = []
    for replica in remote.replicas:
        state = "healthy" if replica.healthy else f"unreachable: {replica.error or 'no answer'}"
        lines.append(f"{replica.url}: {state}, {replica.in_flight} in flight")
    return "\n".join(lines)


class RemotesModel(RecordTableModel):
    columns = (  # Health last: it takes the room left, for the reason when unreachable
        Column("Name", lambda r: r.name, tooltip=lambda r: f"{r.kind} API; key {r.key or 'none'}"),
        Column("URLs", lambda r: r.urls_text, tooltip=_replicas_tip),
        Column("Models", lambda r: r.models_text, tooltip=lambda r: "\n".join(r.models)),
        Column("Latency", lambda r: r.latency_text, numeric=True),
        Column("In flight", lambda r: str(r.in_flight), lambda r: r.in_flight, numeric=True),
        Column(
            "Health",
            lambda r: r.health_text,
            tooltip=_replicas_tip,
            tone=lambda r: "success" if r.healthy else "danger",
        ),
    )

    def __init__(self, parent=None):
        super().__init__(lambda r: r.name, parent)
