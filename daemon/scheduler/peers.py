"""Runners of other kinds that share the computer's memory with the llama.cpp runners: the
transcription runners (``daemon.transcription.pool``), the speech runners.

The memory plan does not size them; they are counted as the memory they take (the scheduler
reads free memory from the system, where their processes show), and they take part in making
room both ways: a load that does not fit first stops an idle peer runner (cheap to start
again: a second or two), and a peer that starts one first asks the scheduler to unload idle
models until its estimate fits (``Scheduler.free_up``)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Peer", "Peers"]


class Peer(Protocol):
    async def release_idle(self) -> bool:
        """Stop the least recently used of its runners that no request holds; False when
        none is idle."""
        ...


class Peers:
    """The peers a scheduler asks, in the order they were added."""

    def __init__(self) -> None:
        self._peers: list[Peer] = []

    def add(self, peer: Peer) -> None:
        self._peers.append(peer)

    async def release_one(self) -> bool:
        """Stop one idle runner of some peer; False when none is idle."""
        for peer in self._peers:
            if await peer.release_idle():
                return True
        return False
