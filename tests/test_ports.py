"""Ports handed to servers that start later: free, distinct, and clear of the ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hopzero import ports


def ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_ports_are_distinct_free_and_below_the_ephemeral_range():
    chosen = ports.free_ports(50)
    assert len(set(chosen)) == 50
    for port in chosen:
        assert ports.LOWEST <= port < ephemeral_low()
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # still free: nothing took it


def test_a_port_is_never_handed_out_twice():
    first = set(ports.free_ports(200))
    assert first.isdisjoint(ports.free_ports(200))


class Scripted:
    """A chooser that proposes the given starting ports in order."""

    def __init__(self, *starts: int) -> None:
        self.starts = list(starts)

    def randrange(self, start: int, stop: int) -> int:
        return self.starts.pop(0)


def test_ports_in_use_are_skipped(monkeypatch):
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", ports.free_port()))
        listener.listen()
        taken = listener.getsockname()[1]
        ports._handed_out.discard(taken)  # as if another process had chosen it
        after = ports.free_port_block(4) + 1  # four free ports; the last three are proposed below
        ports._handed_out.difference_update(range(after, after + 3))
        monkeypatch.setattr(ports, "_chooser", Scripted(taken, after))
        assert ports.free_port() == after
        ports._handed_out.discard(after)
        monkeypatch.setattr(ports, "_chooser", Scripted(taken - 1, after))
        assert ports.free_port_block(3) == after  # a block overlapping the listener is skipped too
    finally:
        listener.close()


def test_a_block_needs_a_length():
    with pytest.raises(ValueError, match="length of at least 1"):
        ports.free_port_block(0)
