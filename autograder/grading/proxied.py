"""Calls of the learner's code to a used exercise (``Exercise.uses``), answered by the reference,
on arguments the learner's code chose: bounded before they run, and run where they can be killed.

A learner's ``multi_head_attention`` may call ``scaled_dot_product_attention``; the grader
answers with the reference's result so that one mistake counts once. The arguments are the
learner's to choose: 21 MB of float16 made the grader's own process run NumPy's float16 matmul
for 72 s (another call: 409 s), while an alarm waited for the C code to return. So a call:

1. is costed first against the exercise's own cases (:func:`scale`): the elements it passes and
   an estimate of the work of a matrix product on its arrays, each at most a few times what the
   largest case of the exercise needs; more is refused in words, no byte computed;
2. has its float16 arrays cast to float32 (NumPy's float16 arithmetic has no fast path; the
   result is cast back), and counts integer arrays as the slow arithmetic they are;
3. runs in a worker process forked from the grader (:class:`Worker`, kept for the next call),
   with its own CPU and memory limits and a wall deadline that is the exercise's: the grader
   kills it at the deadline whatever C code it is in, and forks a fresh one at the next call.

What crosses to the worker and back is ``protocol``'s plain data, never a pickle.
"""
from __future__ import annotations

import ctypes
import importlib
import math
import os
import signal
import socket
import sys
import threading
import time

import numpy as np

from ..isolation import frames, protocol
from .arguments import describe_rejected

CALL_SECONDS = 5.0  # wall and CPU seconds of one call, at most (the exercise's deadline may cut it)
CALL_MB = 1024  # memory the worker may add to what it inherits
ELEMENTS = 8  # a call's elements: at most this many times the largest case's
WORK = 16  # its estimated work: at most this many times the largest case's
FLOOR_ELEMENTS, FLOOR_WORK = 1 << 16, 1 << 24  # what any call may take, however small the cases
SLOW_INTEGERS = 16  # integer arithmetic has no BLAS: each element counts this many times
_PR_SET_PDEATHSIG = 1


# ------------------------------------------------------------------------------- the cost check

def _arrays(value, depth=0):
    if depth > protocol.MAX_DEPTH:
        return
    if isinstance(value, np.ndarray):
        yield value.dtype.name, tuple(value.shape)
    elif type(value).__name__ == "Tensor" and hasattr(value, "shape"):
        yield str(value.dtype).replace("torch.", ""), tuple(value.shape)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v, depth + 1)


def cost(value) -> tuple[int, int]:
    """``(elements, work)`` of the arrays in ``value``: work estimates a matrix product of each
    array of two axes or more with its own last two sizes (``size * (rows + columns)``), which
    bounds what attention, a softmax or a projection does on it."""
    elements = work = 0
    shapes, slow = [], 1
    for dtype, shape in _arrays(value):
        n = math.prod(shape)
        slow = max(slow, SLOW_INTEGERS if dtype.startswith(("int", "uint")) else 1)
        elements += n
        work += n * (shape[-2] + shape[-1] if len(shape) >= 2 else 1) * slow
        shapes.append(shape)
    try:  # arrays that broadcast together cost what their broadcast holds: (N,1,1), (1,N,1), (1,1,N) is N^3
        joint = np.broadcast_shapes(*shapes) if len(shapes) > 1 else ()
    except ValueError:
        joint = ()
    if joint:
        n = math.prod(joint)
        elements = max(elements, n)
        work = max(work, n * (joint[-2] + joint[-1] if len(joint) >= 2 else 1) * slow)
    return elements, work


def scale(cases) -> tuple[int, int]:
    """The largest ``cost`` of one case's inputs among ``cases``: what a call is held to."""
    found = [cost(c.inputs) for c in cases] or [(0, 0)]
    return max(e for e, _ in found), max(w for _, w in found)


def refusal(args, kwargs, limits: tuple[int, int]) -> str | None:
    """Why a call on these arguments is refused before it runs (in the grader's words, with
    counts only), or None."""
    elements, work = cost([args, kwargs])
    most_elements = max(FLOOR_ELEMENTS, ELEMENTS * limits[0])
    most_work = max(FLOOR_WORK, WORK * limits[1])
    if elements > most_elements:
        return (f"the arguments hold {elements} array elements, more than {most_elements} "
                "(several times what this exercise's largest case needs); the grader does not compute on them")
    if work > most_work:
        return (f"the arguments would cost about {work:.2g} operations, more than {most_work:.2g} "
                "(several times what this exercise's largest case needs); the grader does not compute on them")
    return None


# ----------------------------------------------------------------------------------- the worker

def _cast(value, to, depth=0):
    """``value`` with its ``float16`` arrays as ``to`` (float32), and whether any was cast."""
    import torch

    if isinstance(value, np.ndarray) and value.dtype == np.float16:
        return value.astype(np.float32), True
    if isinstance(value, torch.Tensor) and value.dtype == torch.float16:
        return value.float(), True
    if isinstance(value, (list, tuple)) and depth <= protocol.MAX_DEPTH:
        pairs = [_cast(v, to, depth + 1) for v in value]
        return type(value)(v for v, _ in pairs), any(c for _, c in pairs)
    if isinstance(value, dict) and depth <= protocol.MAX_DEPTH:
        pairs = {k: _cast(v, to, depth + 1) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    return value, False


def _back(value, depth=0):
    """float32 arrays of a result cast back to float16 (its inputs were float16)."""
    import torch

    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(np.float16)
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.half()
    if isinstance(value, (list, tuple)) and depth <= protocol.MAX_DEPTH:
        return type(value)(_back(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth <= protocol.MAX_DEPTH:
        return {k: _back(v, depth + 1) for k, v in value.items()}
    return value


def answer_in_worker(msg) -> bytes:
    """The reply frame to one call (run in the worker)."""
    name, module, args, kwargs = msg["call"], msg["module"], msg["args"], msg["kwargs"]
    try:
        reference = getattr(importlib.import_module(f"solutions.{module}"), name)
        cast_args, cast = _cast(args, np.float32)
        cast_kwargs, cast_k = _cast(kwargs, np.float32)
        result = reference(*cast_args, **cast_kwargs)
        return protocol.encode({"result": _back(result) if cast or cast_k else result})
    except MemoryError:
        return protocol.encode({"error": f"the reference needed more than {CALL_MB} MB on these arguments"})
    except Exception as err:  # noqa: BLE001  the learner's arguments made the reference fail
        return protocol.encode({"error": describe_rejected(name, args, kwargs, err)[:500]})


def _serve(sock: socket.socket, parent: int) -> None:  # pragma: no cover  (its coverage is its replies)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(0)
    import resource

    import torch

    torch.set_num_threads(1)  # the grader's thread pools are not the worker's
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGXCPU):
        signal.signal(sig, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        with open("/proc/self/statm") as f:
            in_use = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = in_use + CALL_MB * 2**20
        if soft == resource.RLIM_INFINITY or cap < soft:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (OSError, ValueError):
        pass
    read_some = frames.of_socket(sock)
    while True:
        body = frames.read(read_some, protocol.MAX_MESSAGE)
        msg = protocol.decode(body, torch_tensors=True)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        spent = usage.ru_utime + usage.ru_stime
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = int(spent + float(msg["seconds"])) + 1  # SIGXCPU ends the worker past it
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        sock.sendall(answer_in_worker(msg))


class Worker:
    """A process forked from the grader that answers calls one at a time, killed and replaced
    whenever one runs past its deadline."""

    def __init__(self):
        self.pid = None
        self.sock = None

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover
            code = 0
            try:
                ours.close()
                _serve(theirs, parent)
            except BaseException:  # noqa: BLE001  the socket closed, or a limit: the parent sees it end
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self.sock = pid, ours

    def stop(self) -> None:
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.sock.close()
        self.pid = self.sock = None

    def call(self, name: str, module: str, args, kwargs, seconds: float) -> bytes:
        """The reply frame (``{"result": ...}`` or ``{"error": ...}``) by ``seconds`` from now."""
        if self.pid is None:
            self._start()
        deadline = time.monotonic() + seconds
        try:
            self.sock.sendall(protocol.encode({"call": name, "module": module, "args": args, "kwargs": kwargs,
                                               "seconds": seconds}, max_string=protocol.MAX_MESSAGE))
            body = frames.read(frames.of_socket(self.sock), protocol.MAX_MESSAGE, deadline)
            return frames.frame(bytes(body))
        except TimeoutError:
            self.stop()
            return protocol.encode({"error": f"the reference took longer than {seconds:.3g} s on these arguments"})
        except (OSError, frames.Closed, protocol.Garbage):
            self.stop()  # it ended on its CPU or memory limit
            return protocol.encode({"error": "the reference ran out of the time or memory the grader allows "
                                             "for one call on these arguments"})


_WORKERS = threading.local()  # one per grader thread (a worker serves one call at a time)


def worker() -> Worker:
    found = getattr(_WORKERS, "worker", None)
    if found is None or found.pid is not None and _ended(found.pid):
        found = _WORKERS.worker = Worker()
    return found


def _ended(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def answerer(proxies: dict[str, str], cases, deadline: float | None = None):
    """``answer(name, args, kwargs) -> reply frame`` for the calls of one exercise's run:
    ``proxies`` maps the exercise ids it may call to their modules; ``cases`` set the scale a
    call is held to; ``deadline`` (``time.monotonic()``) is the exercise's, which no call outlives."""
    limits = scale(cases)

    def answer(name, args, kwargs) -> bytes:
        try:
            return _answer(name, args, kwargs)
        except Exception as err:  # noqa: BLE001  whatever the child sent, an error reply, never a grader crash
            return protocol.encode({"error": f"the grader could not take this call ({type(err).__name__})"})

    def _answer(name, args, kwargs) -> bytes:
        if type(name) is not str or name not in proxies or type(args) is not list or type(kwargs) is not dict:
            return protocol.encode({"error": f"no reference for {str(name)[:60]!r} in this exercise"})
        refused = refusal(args, kwargs, limits)
        if refused:
            return protocol.encode({"error": f"the reference {name} was not run: {refused}"})
        left = CALL_SECONDS if deadline is None else min(CALL_SECONDS, deadline - time.monotonic())
        if left <= 0:
            return protocol.encode({"error": "the exercise's time ran out before the reference could run"})
        return worker().call(name, proxies[name], args, kwargs, left)

    return answer
