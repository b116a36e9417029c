"""Length-prefixed frames over a byte stream: the one framing of the grader's channels.

A frame is ``u64 length (little-endian) | body``. Two channels use it: the learner's process
and the grader, over a socket (``protocol.py``, whose bodies are its tagged trees), and a
kernel and its warm service, over pipes (``service/``, JSON bodies).

A reader never trusts the other side's length: it is checked against the reader's limit
before any byte of the body is read (:class:`Oversize`), and the body is read into a buffer
grown as its bytes arrive, never allocated on the sender's word alone. Each read has a
deadline (``TimeoutError``); an end of stream, or a transport that failed, is :class:`Closed`.

The transport is a function ``read_some(n, seconds)``: at most ``n`` bytes, ``b""`` at the
end of the stream, TimeoutError if none came within ``seconds`` (None: wait). :func:`of_socket`
and :func:`of_pipe` make one. Standard library only: a learner's kernel imports this (the
service's client half), and so does the learner's confined process, where learner code may
patch builtins (hence the names captured below, as ``protocol.py`` does).
"""
from __future__ import annotations

import os
import select
import socket
import struct
import time

LENGTH = struct.Struct("<Q")  # the length prefix: the byte count of the body that follows
CHUNK = 1 << 20  # bytes asked of the transport at once

_len, _min, _bytearray, _monotonic = len, min, bytearray, time.monotonic


class Closed(EOFError):
    """The other side closed the stream (its process exited or was killed), or it failed."""


class Oversize(ValueError):
    """A frame longer than what the reader allows: refused before its body is read (the
    stream cannot be trusted after)."""


def frame(body: bytes) -> bytes:
    """``body`` with its length prefix."""
    return LENGTH.pack(_len(body)) + body


def read(read_some, limit: int, deadline: float | None = None) -> bytearray:
    """One frame's body, of at most ``limit`` bytes, by ``deadline`` (``time.monotonic()``)."""
    return exactly(read_some, length(read_some, limit, deadline), deadline)


def length(read_some, limit: int, deadline: float | None = None) -> int:
    """The next frame's length, Oversize when it is past ``limit``; its body is left unread."""
    (n,) = LENGTH.unpack(exactly(read_some, LENGTH.size, deadline))
    if n > limit:
        raise Oversize(f"a message of {n} bytes, more than the {limit} bytes allowed")
    return n


def exactly(read_some, n: int, deadline: float | None = None) -> bytearray:
    """``n`` bytes, in one buffer grown as they arrive."""
    data = _bytearray()
    while _len(data) < n:
        left = None
        if deadline is not None:
            left = deadline - _monotonic()
            if left <= 0:
                raise TimeoutError
        chunk = read_some(_min(n - _len(data), CHUNK), left)
        if not chunk:
            raise Closed("end of stream")
        data += chunk
    return data


def of_socket(sock: socket.socket):
    """``read_some`` of a socket (its timeout is set for each read)."""
    def read_some(n: int, seconds: float | None) -> bytes:
        sock.settimeout(seconds)
        try:
            return sock.recv(n)
        except socket.timeout:
            raise TimeoutError from None
        except OSError as err:  # e.g. connection reset by a killed process
            raise Closed(str(err)) from None

    return read_some


def of_pipe(fd: int):
    """``read_some`` of a pipe's file descriptor (on Windows, where a pipe cannot be polled,
    each read waits: the deadline is seen only between reads)."""
    def read_some(n: int, seconds: float | None) -> bytes:
        if seconds is not None and not ready(fd, seconds):
            raise TimeoutError
        try:
            return os.read(fd, n)
        except OSError as err:
            raise Closed(str(err)) from None

    return read_some


def ready(fd: int, seconds: float) -> bool:
    """Whether the pipe ``fd`` has data (or its end) within ``seconds``; always True on
    Windows, where pipes cannot be polled."""
    if os.name == "nt":
        return True
    return bool(select.select([fd], [], [], seconds)[0])


def write_pipe(fd: int, data: bytes) -> None:
    """All of ``data`` into the pipe ``fd`` (a socket has ``sendall``)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
