"""Free loopback ports for the brokers the tests and the reference launcher start.

Owns: `port_free`, `free_port_block` (consecutive free ports outside the kernel's ephemeral range).
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as asyncio's listeners do: connections of the previous run in TIME_WAIT do not block a restart
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _ephemeral_range() -> tuple[int, int]:
    """The range the kernel takes clients' local ports from (Linux's default when it cannot be read)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32_768, 60_999


def free_port_block(count: int, attempts: int = 200, host: str = "127.0.0.1") -> int:
    """The first of `count` consecutive free loopback ports (node i of a cluster listens on port + i), outside the
    ephemeral range: while a server restarts, the clients reconnecting to it take local ports from that range, and
    one of them holding a listener's port (even connected to itself, TCP's simultaneous open) keeps the server from
    binding it again."""
    low, high = _ephemeral_range()
    spans = [(lo, hi) for lo, hi in ((10_000, low - count), (high + 1, 65_000 - count)) if lo < hi]
    rng = random.Random()
    for _ in range(attempts):
        lo, hi = rng.choice(spans)
        first = rng.randrange(lo, hi)
        if all(port_free(first + i, host) for i in range(count)):
            return first
    raise RuntimeError(f"no block of {count} free loopback ports outside {low}..{high} after {attempts} attempts")
