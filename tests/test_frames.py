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


# ------------------------------------------------------------------- total decoding (fuzzed)
# The decoder is a total function of the child's bytes: a value or Garbage, nothing else. Each
# frame below crashed the grader before (a dtype that is a list: TypeError; a shape whose
# product overflows: NumPy's ValueError) — exit 1 with no results.json.

import json as _json  # noqa: E402
import struct as _struct  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _body(header, buffers: bytes = b"") -> bytes:
    head = _json.dumps(header, allow_nan=True).encode() if not isinstance(header, bytes) else header
    return _struct.pack("<I", len(head)) + head + buffers


def _total(body: bytes, **kw):
    try:
        return protocol.decode(body, **kw)
    except protocol.Garbage:
        return protocol.Garbage


@pytest.mark.parametrize("header", [
    {"a": [0, ["float32"], [2], "np"]},  # a dtype that is a list (was TypeError)
    {"a": [0, {"x": 1}, [2], "np"]},
    {"a": [0, "float32", [0] + [2**26] * 8, "np"]},  # an empty array whose shape overflows (was ValueError)
    {"a": [0, "float32", [float("nan")], "np"]},  # a NaN size
    {"a": [0, "float32", [2], ["np"]]},  # a kind that is a list
    {"a": [[0], "float32", [2], "np"]},
    {"d": {"k": {"a": [0, "float64", [2**40, 0], "scalar"]}}},
    _json.loads("[" * 20 + "1" + "]" * 20),  # deeper than MAX_DEPTH
])
def test_frames_that_crashed_the_grader_are_garbage(header):
    assert _total(_body(header), torch_tensors=True) is protocol.Garbage
    assert _total(_body(header)) is protocol.Garbage


def test_numbers_past_what_json_holds_are_garbage_or_data():
    for head in (b'{"d": {"n": ' + b"9" * 5000 + b"}}", b"[1e999999, -1e999, NaN]", b"[" * 5000 + b"]" * 5000):
        got = _total(_body(head))
        assert got is protocol.Garbage or isinstance(got, list)


_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                  st.floats(allow_nan=True), st.text(max_size=8))
_dtype = st.one_of(st.sampled_from(sorted(protocol.ALLOWED_DTYPES) + ["complex64", "object", "<U3", ""]),
                   st.lists(st.text(max_size=4), max_size=2), st.integers(), st.none(), st.floats())
_shape = st.one_of(st.lists(st.one_of(st.integers(min_value=-3, max_value=2**64), st.floats(), st.text(max_size=2)),
                            max_size=34), st.integers(), st.none())
_array = st.builds(lambda i, d, s, k: {"a": [i, d, s, k]}, st.one_of(st.integers(-1, 3), st.text(max_size=2)),
                   _dtype, _shape, st.one_of(st.sampled_from(["np", "scalar", "torch"]), st.integers(), st.lists(st.none())))
_node = st.recursive(
    st.one_of(_leaf, _array),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.builds(lambda v: {"t": v}, st.lists(inner, max_size=4)),
                            st.builds(lambda v: {"d": v}, st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(header=_node, buffers=st.binary(max_size=64), torch_tensors=st.booleans())
def test_any_tree_of_tags_decodes_to_data_or_garbage(header, buffers, torch_tensors):
    _total(_body(header, buffers), torch_tensors=torch_tensors)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=st.binary(max_size=200))
def test_any_bytes_decode_to_data_or_garbage(raw):
    _total(raw)
    _total(_struct.pack("<I", len(raw)) + raw)


def test_a_message_that_passed_decodes_again_with_tensors():
    # The exchange decodes a proxied call's frame a second time, with tensors: it must be total too.
    body = _body({"d": {"call": "softmax", "args": [{"a": [0, "uint64", [2], "torch"]}], "kwargs": {"d": {}}}},
                 bytes(16))
    got = _total(body, torch_tensors=True)
    assert got is protocol.Garbage or isinstance(got, dict)
