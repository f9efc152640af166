"""Length-prefixed pickle frames over a loopback TCP socket, shared by the parent and its workers.

TCP rather than multiprocessing pipes because the parent must notice a silent worker (heartbeats)
and a dead one (EOF) with one selector, whatever the start method.
"""

from __future__ import annotations

import pickle
import select
import socket
import struct
import threading
import time

HEADER = struct.Struct("!Q")
MAX_FRAME = 1 << 40  # a corrupt header must not make us allocate the moon


# token, launch id, pid: raw bytes, so that nothing is unpickled before the token has been checked
# (any local user can connect to a loopback port)
HELLO = struct.Struct("!32sQQ")


def frame(message) -> bytes:
    payload = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def tune(sock: socket.socket) -> None:
    # small request/answer messages: Nagle's delay would cost ~40 ms per candidate
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class FrameReader:
    """Parent side: bytes arrive in arbitrary pieces from a non-blocking socket."""

    def __init__(self):
        self._buf = bytearray()

    def feed(self, data: bytes) -> list:
        self._buf += data
        out = []
        while len(self._buf) >= HEADER.size:
            (n,) = HEADER.unpack_from(self._buf)
            if n > MAX_FRAME:
                raise ValueError(f"corrupt frame header announcing {n} bytes")
            if len(self._buf) < HEADER.size + n:
                break
            payload = bytes(self._buf[HEADER.size:HEADER.size + n])
            del self._buf[:HEADER.size + n]
            out.append(pickle.loads(payload))
        return out


def send_all(sock: socket.socket, data: bytes, timeout: float) -> None:
    """sendall for a non-blocking socket, bounded by ``timeout`` seconds of no progress at all."""
    view = memoryview(data)
    deadline = time.monotonic() + timeout
    while view:
        try:
            sent = sock.send(view)
        except BlockingIOError:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"could not send {len(view)} bytes within {timeout:g}s")
            select.select([], [sock], [], remaining)
            continue
        view = view[sent:]
        deadline = time.monotonic() + timeout


class Channel:
    """Child side: a blocking socket shared by the main loop and the heartbeat thread."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._lock = threading.Lock()

    def send(self, message) -> None:
        data = frame(message)
        with self._lock:
            self.sock.sendall(data)

    def recv(self):
        (n,) = HEADER.unpack(self._exact(HEADER.size))
        return pickle.loads(self._exact(n))

    def _exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:])
            if k == 0:
                raise EOFError("the parent closed the connection")
            got += k
        return bytes(buf)
