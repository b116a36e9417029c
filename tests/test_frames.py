"""The one framing of the grader's channels (autograder/isolation/frames.py), over both of its
transports: a socket (the learner's process and the grader, protocol.py) and a pipe (a kernel
and its warm service, service/channel.py)."""
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from autograder.isolation import frames, protocol
from autograder.service import channel

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 1000


class Socket:
    def __init__(self):
        self.reader, self.writer = socket.socketpair()
        self.read_some = frames.of_socket(self.reader)

    def write(self, data: bytes) -> None:
        self.writer.sendall(data)

    def close_writer(self) -> None:
        self.writer.close()

    def unread(self) -> bytes:
        self.reader.setblocking(False)
        try:
            return self.reader.recv(1 << 16)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


class Pipe:
    def __init__(self):
        self.reader, self.writer = os.pipe()
        self.read_some = frames.of_pipe(self.reader)

    def write(self, data: bytes) -> None:
        frames.write_pipe(self.writer, data)

    def close_writer(self) -> None:
        if self.writer is not None:
            os.close(self.writer)
            self.writer = None

    def unread(self) -> bytes:
        return os.read(self.reader, 1 << 16) if frames.ready(self.reader, 0) else b""

    def close(self) -> None:
        self.close_writer()
        os.close(self.reader)


@pytest.fixture(params=[Socket, Pipe], ids=["socketpair", "pipe"])
def stream(request):
    s = request.param()
    yield s
    s.close()


@pytest.mark.parametrize("size", [0, 1, LIMIT, 3 * frames.CHUNK + 5])
def test_a_frame_round_trips(stream, size):
    body = os.urandom(size)
    # A writer of its own: a pipe holds 64 kB, the largest frame is read while it is written.
    writer = threading.Thread(target=stream.write, args=(frames.frame(body) + frames.frame(b"next"),))
    writer.start()
    assert frames.read(stream.read_some, len(body), time.monotonic() + 30) == body
    assert frames.read(stream.read_some, 4, time.monotonic() + 30) == b"next"
    writer.join()


def test_a_frame_over_the_limit_is_refused_from_its_length_alone(stream):
    stream.write(frames.LENGTH.pack(LIMIT + 1))  # the length, and no body: a reader waiting for it would hang
    started = time.monotonic()
    with pytest.raises(frames.Oversize, match=f"a message of {LIMIT + 1} bytes"):
        frames.read(stream.read_some, LIMIT, time.monotonic() + 30)
    assert time.monotonic() - started < 5


def test_a_refused_frame_leaves_its_body_unread(stream):
    stream.write(frames.LENGTH.pack(LIMIT + 1) + b"body")
    with pytest.raises(frames.Oversize):
        frames.read(stream.read_some, LIMIT, time.monotonic() + 30)
    assert stream.unread() == b"body"


@pytest.mark.parametrize("sent", [b"", b"\x05\x00", frames.LENGTH.pack(10) + b"half"],
                         ids=["nothing", "half a length", "half a body"])
def test_a_truncated_frame_is_the_end_of_the_stream(stream, sent):
    stream.write(sent)
    stream.close_writer()
    with pytest.raises(frames.Closed):
        frames.read(stream.read_some, LIMIT, time.monotonic() + 30)


def test_a_frame_late_past_its_deadline_is_a_timeout(stream):
    stream.write(frames.LENGTH.pack(10) + b"half")  # the rest never comes; the stream stays open
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        frames.read(stream.read_some, LIMIT, started + 0.3)
    assert 0.3 <= time.monotonic() - started < 5


def test_a_claimed_length_allocates_nothing_until_its_bytes_arrive(stream):
    stream.write(frames.LENGTH.pack(60 * 2**20) + b"x" * 100)
    stream.close_writer()
    tracemalloc.start()
    try:
        with pytest.raises(frames.Closed):
            frames.read(stream.read_some, 64 * 2**20, time.monotonic() + 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # A read asks for a chunk at a time (a socket's recv allocates what it is asked for), never for 60 MB.
    assert peak < 4 * frames.CHUNK, f"{peak} bytes held for a frame of 100 bytes"


# ------------------------------------------------------------------------- its two users

def test_protocol_keeps_its_error_names_on_the_shared_framing():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(frames.LENGTH.pack(protocol.MAX_MESSAGE + 1))
        with pytest.raises(protocol.Oversize) as refused:
            protocol.recv_frame(ours, time.monotonic() + 30)
        assert isinstance(refused.value, protocol.Garbage) and isinstance(refused.value, frames.Oversize)
        protocol.send(theirs, {"ok": [1.5, "x"]})
        assert protocol.recv(ours, time.monotonic() + 30) == {"ok": [1.5, "x"]}
        theirs.sendall(frames.LENGTH.pack(2) + b"ab")  # shorter than a header's length
        with pytest.raises(protocol.Garbage, match="a message of 2 bytes"):
            protocol.recv_frame(ours, time.monotonic() + 30)
        theirs.close()
        with pytest.raises(protocol.Closed):
            protocol.recv(ours, time.monotonic() + 30)


def test_the_service_channel_round_trips_json_over_a_pipe():
    reader, writer = os.pipe()
    try:
        channel.send(writer, {"exercise": "softmax", "sources": {"attention": "x = 1\n"}, "limit": None})
        assert channel.receive(reader, time.monotonic() + 30) == {
            "exercise": "softmax", "sources": {"attention": "x = 1\n"}, "limit": None}
    finally:
        os.close(reader)
        os.close(writer)


def test_the_kernel_side_imports_neither_numpy_nor_torch():
    """What a learner's kernel imports for check() (its client half and the framing) stays light:
    torch and numpy are the service's to import, in its own process."""
    code = ("import sys\nfrom autograder import service, submission\nimport mha_exercises.check\n"
            "print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "MHA_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
