"""Plain data over a socket: the only way anything leaves the learner's process.

A message is a length-prefixed frame (``frames.py``: the length checked before the body is read)::

    u64 total length | u32 header length | JSON header | raw array buffers

The JSON header is a tree whose containers are tagged, so nothing the learner returns can
pose as one of our tags: ``[..]`` a list, ``{"t": [..]}`` a tuple, ``{"d": {..}}`` a dict
with string keys, ``{"a": [index, dtype, shape, kind]}`` an array (``kind`` is ``"np"``,
``"scalar"`` for a NumPy scalar, or ``"torch"``), and JSON numbers, strings, booleans, null.
Arrays travel as bytes and come back through ``np.frombuffer``: nothing is ever pickled, so
decoding cannot run code of the sender's making. Everything decoded is validated (dtype
allow-list, byte counts, sizes, depth); anything else raises :class:`Garbage`, which the
pipeline reports as ``CaseError("garbage")``.

What the grader reads from a child is the learner's to spend, never the grader's: a frame's
length is checked before its bytes are read (``MAX_MESSAGE``), and its JSON header's length
(``MAX_HEADER``) and an upper bound of its node count (``MAX_NODES``, counted in the raw
bytes) before it is parsed, so that no header makes the grader build millions of objects.
(A 60 MB header of empty objects once grew the grader by 1.57 GB.)

Encoding runs in the learner's process after the learner's code may have patched numpy,
torch or builtins, so it uses references captured at import time, and it turns ndarray and
Tensor *subclasses* into plain arrays through the base classes' own methods (a subclass that
overrides ``__eq__``, ``__array_function__`` or ``__torch_function__`` cannot fake its data).
"""
from __future__ import annotations

import json
import math
import socket
import struct
import sys

import numpy as np

from . import frames

# Captured now: learner code in the worker may later patch builtins or numpy attributes.
_type, _isinstance, _len, _list, _dict, _tuple = type, isinstance, len, list, dict, tuple
_int, _float, _str, _bool, _bytes = int, float, str, bool, bytes
_ndarray, _generic = np.ndarray, np.generic
_view, _tobytes, _asarray = np.ndarray.view, np.ndarray.tobytes, np.asarray
_frombuffer, _npdtype = np.frombuffer, np.dtype
_dumps, _loads = json.dumps, json.loads

ALLOWED_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64"}
)
MAX_MESSAGE = 64 * 2**20  # bytes per message: a case's outputs are far smaller (17 kB at most in a run)
MAX_HEADER = 2**20  # bytes of a message's JSON header: the arrays travel beside it (1 kB at most in a run)
MAX_DEPTH = 16
MAX_NODES = 100_000
MAX_STRING = 20_000
# What the grader sends a child (the job): the learner's module sources travel as strings, of
# up to a module's size (submission.MAX_SOURCE); the child reads them with these limits.
JOB_LIMITS = {"max_string": 2**20, "max_header": MAX_MESSAGE}
_HEAD_LENGTH = struct.Struct("<I")


class Garbage(Exception):
    """Data that is not plain data of the expected form."""


class Oversize(Garbage, frames.Oversize):
    """A frame longer than what the reader allows: refused before its bytes are read."""


Closed = frames.Closed  # the other side closed the socket (the learner's process exited or was killed)


# ----------------------------------------------------------------------------------- encode

def encode(value, *, max_string: int = MAX_STRING) -> bytes:
    """One message holding ``value`` (plain data, arrays and tensors); raises Garbage."""
    buffers: list = []
    counter = [0, max_string]  # nodes so far, the longest string allowed
    header = _dumps(_tree(value, buffers, 0, counter), allow_nan=True, separators=(",", ":"))
    head = header.encode()
    total = 4 + _len(head) + sum(_len(b) for b in buffers)
    if total > MAX_MESSAGE:
        raise Garbage(f"output of {total} bytes is larger than the {MAX_MESSAGE} bytes allowed")
    return b"".join([frames.LENGTH.pack(total), _HEAD_LENGTH.pack(_len(head)), head, *buffers])


def _tree(x, buffers, depth, counter):
    counter[0] += 1
    if depth > MAX_DEPTH or counter[0] > MAX_NODES:
        raise Garbage("output nested too deeply or too large")
    t = _type(x)
    if x is None or t is _bool or t is _str and _len(x) <= counter[1]:
        return x
    if t is _int:
        if not -(2**63) <= x < 2**64:
            raise Garbage("an integer too large for plain data")
        return x
    if t is _float:
        return x
    if _isinstance(x, _generic):  # NumPy scalar: keep its dtype, as a 0-d array
        return _array(_view(_asarray(x), _ndarray), buffers, "scalar")
    if _isinstance(x, _ndarray):
        # The base class's view: a subclass's overrides play no part from here on.
        return _array(_view(x, _ndarray), buffers, "np")
    if t is _list:
        return [_tree(v, buffers, depth + 1, counter) for v in x]
    if t is _tuple:
        return {"t": [_tree(v, buffers, depth + 1, counter) for v in x]}
    if t is _dict:
        if not all(_type(k) is _str for k in x):
            raise Garbage("a dict with keys that are not strings")
        return {"d": {k: _tree(v, buffers, depth + 1, counter) for k, v in x.items()}}
    tensor = _torch_to_numpy(x)
    if tensor is not None:
        return _array(tensor, buffers, "torch")
    raise Garbage(f"a {t.__name__} object where plain data (arrays, numbers) was expected")


def _array(a, buffers, kind):
    dtype = _str(a.dtype)
    if dtype not in ALLOWED_DTYPES:
        raise Garbage(f"an array of dtype {dtype}, which is not plain numeric data")
    data = _tobytes(a, "C")
    buffers.append(data)
    return {"a": [_len(buffers) - 1, dtype, [_int(n) for n in a.shape], kind]}


def _torch_to_numpy(x):
    """A plain ndarray from a torch Tensor (or subclass), None if ``x`` is not a tensor."""
    torch = sys.modules.get("torch")
    if torch is None or not _isinstance(x, _TORCH_TENSOR or torch.Tensor):
        return None
    if _TORCH_TENSOR is None:  # in the grader's process
        capture_torch()
    # With __torch_function__ disabled, the base methods see the raw data of any subclass.
    with _DISABLE_TORCH_FUNCTION():
        t = _TORCH_TENSOR.detach(x)
        if t.layout != torch.strided or t.is_complex() or t.dtype == torch.bfloat16:
            raise Garbage(f"a tensor of dtype {t.dtype}, layout {t.layout}: not plain numeric data")
        t = _TORCH_TENSOR.cpu(t)
        a = _TORCH_TENSOR.numpy(_TORCH_TENSOR.contiguous(t))
    if _type(a) is not _ndarray:
        raise Garbage("a tensor that did not convert to a plain array")
    return a


def capture_torch():
    """Called by the worker right after importing torch, before any learner code runs."""
    global _TORCH_TENSOR, _DISABLE_TORCH_FUNCTION
    import torch

    _TORCH_TENSOR, _DISABLE_TORCH_FUNCTION = torch.Tensor, torch._C.DisableTorchFunction


_TORCH_TENSOR = None
_DISABLE_TORCH_FUNCTION = None


# ----------------------------------------------------------------------------------- decode

def decode(frame: bytes, *, torch_tensors: bool = False, max_string: int = MAX_STRING,
           max_header: int = MAX_HEADER):
    """The value of one message body (without its 8-byte length); raises Garbage.

    ``torch_tensors``: arrays that were tensors come back as tensors (used in the learner's
    process, where a proxied reference function must return what the learner expects).

    A total function of the bytes: whatever they are, a value or Garbage, never another
    exception (a dtype that is a list, a shape whose product overflows NumPy's, a size that is
    NaN: tests/test_frames.py fuzzes it). What the checks below do not foresee is Garbage too.
    """
    try:
        return _decode(frame, torch_tensors, max_string, max_header)
    except Garbage:
        raise
    except (Exception, RecursionError) as err:  # noqa: BLE001  the sender's bytes never crash the reader
        raise Garbage(f"an unreadable message ({type(err).__name__})") from None


def _decode(frame, torch_tensors, max_string, max_header):
    if _len(frame) < 4:
        raise Garbage("a truncated message")
    (head_len,) = _HEAD_LENGTH.unpack_from(frame)
    if head_len > _len(frame) - 4:
        raise Garbage("a message whose header is longer than the message")
    if head_len > max_header:
        raise Garbage(f"a message header of {head_len} bytes (at most {max_header} are read)")
    head = bytes(frame[4 : 4 + head_len])
    # Every value but the first follows a comma or opens a container: more of those than
    # MAX_NODES (strings' own commas and brackets counted too) is refused before parsing.
    if head.count(b",") + head.count(b"[") + head.count(b"{") >= MAX_NODES:
        raise Garbage(f"a message header of more than {MAX_NODES} values")
    try:
        header = _loads(head.decode())
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise Garbage(f"an unreadable message ({err.__class__.__name__})") from None
    arrays = _Buffers(memoryview(frame)[4 + head_len :])
    value = _untree(header, arrays, 0, [0, max_string], torch_tensors)
    if arrays.offset != _len(arrays.data):
        raise Garbage("a message with unclaimed bytes")
    return value


class _Buffers:
    def __init__(self, data):
        self.data, self.offset, self.next_index = data, 0, 0

    def take(self, index, dtype, shape):
        if index != self.next_index:
            raise Garbage("array buffers out of order")
        self.next_index += 1
        count = math.prod(shape)
        nbytes = count * _npdtype(dtype).itemsize
        if self.offset + nbytes > _len(self.data):
            raise Garbage("an array with fewer bytes than its shape needs")
        chunk = self.data[self.offset : self.offset + nbytes]
        self.offset += nbytes
        # A copy: the result owns its memory and is writable, like any other array.
        return np.frombuffer(chunk, dtype=dtype, count=count).reshape(shape).copy()


def _untree(node, arrays, depth, counter, torch_tensors):
    counter[0] += 1
    if depth > MAX_DEPTH or counter[0] > MAX_NODES:
        raise Garbage("data nested too deeply or too large")
    t = type(node)
    if node is None or t in (bool, int, float):
        return node
    if t is str:
        if len(node) > counter[1]:
            raise Garbage("a string too long")
        return node
    if t is list:
        return [_untree(v, arrays, depth + 1, counter, torch_tensors) for v in node]
    if t is dict and len(node) == 1:
        (tag, body), = node.items()
        if tag == "t" and type(body) is list:
            return tuple(_untree(v, arrays, depth + 1, counter, torch_tensors) for v in body)
        if tag == "d" and type(body) is dict:
            return {k: _untree(v, arrays, depth + 1, counter, torch_tensors) for k, v in body.items()}
        if tag == "a":
            return _decode_array(body, arrays, torch_tensors)
    raise Garbage("a message node of unknown form")


def _decode_array(body, arrays, torch_tensors):
    if not (type(body) is list and len(body) == 4):
        raise Garbage("a malformed array")
    index, dtype, shape, kind = body
    if (
        type(index) is not int
        or type(dtype) is not str or dtype not in ALLOWED_DTYPES
        or type(shape) is not list
        or len(shape) > 32
        or not all(type(n) is int and 0 <= n <= MAX_MESSAGE for n in shape)
        # An empty array's other axes count too: NumPy refuses a shape whose product overflows.
        or math.prod(n for n in shape if n) > MAX_MESSAGE
        or type(kind) is not str or kind not in ("np", "scalar", "torch")
    ):
        raise Garbage("a malformed array")
    a = arrays.take(index, dtype, shape)
    if kind == "scalar":
        if shape:
            raise Garbage("a malformed NumPy scalar")
        return a[()]
    if kind == "torch" and torch_tensors:
        import torch

        return torch.from_numpy(a)
    return a


# ---------------------------------------------------------------------------- socket I/O

def send(sock: socket.socket, value, *, max_string: int = MAX_STRING) -> None:
    sock.sendall(encode(value, max_string=max_string))


def send_frame(sock: socket.socket, frame: bytes) -> None:
    sock.sendall(frame)


def recv_frame(sock: socket.socket, deadline: float | None = None, limit: int = MAX_MESSAGE) -> bytearray:
    """One message body (header length onwards); Closed on EOF, TimeoutError at the deadline.

    Raises Oversize for a frame longer than ``limit`` (at most MAX_MESSAGE), Garbage for one
    too short to hold a header; either way, before its body is read (the stream cannot be
    trusted after).
    """
    read_some = frames.of_socket(sock)
    try:
        total = frames.length(read_some, min(limit, MAX_MESSAGE), deadline)
    except frames.Oversize as err:
        raise Oversize(str(err)) from None
    if total < 4:
        raise Garbage(f"a message of {total} bytes")
    return frames.exactly(read_some, total, deadline)


def recv(sock: socket.socket, deadline: float | None = None, *, torch_tensors: bool = False, **limits):
    """One message's value; ``limits``: ``max_string`` and ``max_header`` (e.g. JOB_LIMITS)."""
    return decode(recv_frame(sock, deadline), torch_tensors=torch_tensors, **limits)
