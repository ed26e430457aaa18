"""Free TCP ports on 127.0.0.1 for servers started a moment later, chosen outside the kernel's
ephemeral range.

A port found by binding port 0 comes from the ephemeral range, which is also where the kernel
draws the source port of every outgoing connection. Between choosing such a port and the server
binding it, any connection on the machine can take it: a Ray head makes hundreds, and its
dashboard then fails with "address already in use". Ports below the ephemeral range are only
ever given to whoever asks for that very number, so one checked free here stays free until the
server that was told to use it binds it.
"""

from __future__ import annotations

import functools
import random
import socket
from pathlib import Path

__all__ = ["free_port", "free_port_block", "free_ports"]

#: Lowest port handed out: above the registered ports and Ray's default worker ports (10002-19999).
LOWEST = 20000
#: Used where /proc does not say (Linux's default ephemeral range starts here).
DEFAULT_EPHEMERAL_LOW = 32768
#: Fewest ports the range below the ephemeral one must hold to be used at all.
MIN_POOL = 2000

_handed_out: set[int] = set()  # checked free earlier in this process, perhaps not bound yet
_chooser = random.Random()  # a random start keeps concurrent processes apart; not part of any result


@functools.cache  # the kernel's range is set at boot; read it once, not for every port
def _pool() -> range:
    """The ports to choose from: below the ephemeral range, or all of them if that leaves too few."""
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = DEFAULT_EPHEMERAL_LOW
    if ephemeral_low - LOWEST >= MIN_POOL:
        return range(LOWEST, ephemeral_low)
    return range(LOWEST, 65536)


def _bindable(port: int) -> bool:
    """Whether nothing holds ``port`` on 127.0.0.1 (a listener on 0.0.0.0 counts too)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(length: int) -> int:
    """The first of ``length`` consecutive free ports that no earlier call in this process handed out."""
    if length < 1:
        raise ValueError(f"a block of ports needs a length of at least 1, not {length}")
    pool = _pool()
    for _ in range(200):
        low = _chooser.randrange(pool.start, pool.stop - length + 1)
        block = range(low, low + length)
        if not _handed_out.intersection(block) and all(_bindable(port) for port in block):
            _handed_out.update(block)
            return low
    raise RuntimeError(f"no {length} consecutive free TCP ports found in {pool.start}-{pool.stop - 1}")


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports that no earlier call in this process handed out: the
    servers bind them later, so a port handed out before still looks free and would otherwise
    be given twice."""
    return [free_port_block(1) for _ in range(count)]


def free_port() -> int:
    """One free port (see :func:`free_ports`)."""
    return free_port_block(1)
