"""Learner bytes read under limits: parsing a submission in a forked process that can fail alone.

The grader reads what learners hand in (zips, notebooks' JSON, Python source for notebook
extraction and ``--similarity``) before any confined child exists. Those readers are
Python's own parsers, and a file built for it makes them recurse past the interpreter's
stack, allocate gigabytes or run for minutes. :func:`call` runs such a reader in a child
forked for it, with an address-space limit above what the grader already uses, a CPU limit,
no right to write a byte to any file, and a wall-clock deadline; whatever goes wrong there
(an exception, a limit, a crash, a hang) comes back as :class:`Refused`, a sentence saying
what was refused and why, which the caller turns into that one learner's report. Only JSON
comes back from the child, read up to ``MAX_REPLY`` bytes: nothing is unpickled.

Where ``fork`` does not exist the reader runs in process; its own guards (byte caps,
linear-time patterns, RecursionError and MemoryError caught) still hold.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import time
from typing import Callable

try:
    import resource
except ImportError:  # Windows: there is no fork either, so call() reads in process and sets no limit
    resource = None

READ_SECONDS = 30.0  # wall and CPU seconds to read one submission: an honest one takes well under 1 s
READ_MB = 384  # memory a reader may add to the grader's: a 20 MB notebook's JSON needs about 100 MB
MAX_REPLY = 32 * 2**20  # bytes of JSON a reader may send back (sources are capped at 1 MB a module)
_PR_SET_PDEATHSIG = 1


class Refused(Exception):
    """The reader was stopped or failed; the message says what, in the learner's terms."""


def call(function: Callable, *args, what: str, seconds: float = READ_SECONDS, memory_mb: int = READ_MB,
         expected: type[Exception] | None = None):
    """``function(*args)`` (which returns JSON data) under limits; :class:`Refused` if it failed.

    ``what``: the work, for the message ("reading the submission"). ``expected``: an exception
    class the function raises to refuse in its own words; it is raised again here with the same
    message.
    """
    if not hasattr(os, "fork"):
        return _in_process(function, args, what, expected)
    r, w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child: its coverage is the reply it sends)
        os.close(r)
        _child(w, parent, function, args, seconds, memory_mb, expected)
    os.close(w)
    data, late = None, True  # until a whole reply came in time: anything else leaves no reader behind
    try:
        data, late = _read_reply(r, time.monotonic() + seconds)
    finally:
        os.close(r)
        status = _reap(pid, kill=late or data is None)
    if late:
        raise Refused(f"{what} took longer than {seconds:g} s and was stopped (an honest submission takes "
                      "well under a second)")
    if data is None:
        raise Refused(f"{what} sent back more than {MAX_REPLY // 2**20} MB")
    if not data:
        raise Refused(f"{what} failed: {_describe(status, seconds, memory_mb)}")
    try:
        reply = json.loads(data)
    except ValueError:
        raise Refused(f"{what} failed: it sent back a damaged answer") from None
    if "ok" in reply:
        return reply["ok"]
    if "expected" in reply and expected is not None:
        raise expected(reply["expected"])
    raise Refused(f"{what} failed: {reply.get('refused', 'for an unknown reason')}")


# ------------------------------------------------------------------------------- the child

def _child(w: int, parent: int, function, args, seconds, memory_mb, expected) -> None:
    code = 0
    try:
        _limit(parent, seconds, memory_mb)
        reply = _run(function, args, expected)
        try:
            data = json.dumps(reply).encode()
        except MemoryError:
            data = json.dumps({"refused": f"it needed more than {memory_mb} MB of memory"}).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(w, view):]
    except BaseException:  # noqa: BLE001  no reply: the parent reports how this process ended
        code = 70
    finally:
        os._exit(code)


def _run(function, args, expected) -> dict:
    try:
        return {"ok": function(*args)}
    except RecursionError:
        return {"refused": "a file is nested too deeply for the grader to parse it (RecursionError)"}
    except MemoryError:
        return {"refused": "it needed more memory than the grader allows for reading a submission"}
    except Exception as err:  # noqa: BLE001  a failure on learner bytes is that learner's, never the class's
        if expected is not None and isinstance(err, expected):
            return {"expected": str(err)}
        return {"refused": f"{type(err).__name__}: {str(err)[:300]}"}


def _limit(parent: int, seconds: float, memory_mb: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(0)
    for sig in (signal.SIGINT, signal.SIGTERM):  # the grader's handlers are not the reader's: it just dies
        try:
            signal.signal(sig, signal.SIG_DFL)
        except ValueError:  # forked from a thread other than the main one: the grader's handler stays
            pass
    cpu = max(1, int(seconds + 0.999))
    _lower(resource.RLIMIT_CPU, cpu, cpu + 1)
    _lower(resource.RLIMIT_FSIZE, 0, 0)  # a reader writes no file
    _lower(resource.RLIMIT_CORE, 0, 0)
    try:  # what the grader's image already maps, plus the reader's share
        with open("/proc/self/statm") as f:
            in_use = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # not Linux: the time limits and the byte caps still hold
        return
    cap = in_use + memory_mb * 2**20
    _lower(resource.RLIMIT_AS, cap, cap)


def _lower(which: int, soft: int, hard: int) -> None:
    old_soft, old_hard = resource.getrlimit(which)
    if old_hard != resource.RLIM_INFINITY:
        hard = min(hard, old_hard)
    soft = min(soft, hard)
    try:
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):  # a limit this system does not take (RLIMIT_AS on macOS): the others hold
        pass


def _in_process(function, args, what, expected):
    reply = _run(function, args, expected)
    if "ok" in reply:
        return reply["ok"]
    if "expected" in reply:
        raise expected(reply["expected"])
    raise Refused(f"{what} failed: {reply['refused']}")


# ------------------------------------------------------------------------------ the parent


def _read_reply(fd: int, deadline: float) -> tuple[bytes | None, bool]:
    """``(data, late)``: what came before EOF (None if over MAX_REPLY), and whether the deadline passed."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"", True
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except InterruptedError:
            continue
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), False
        size += len(chunk)
        if size > MAX_REPLY:
            return None, False
        chunks.append(chunk)


def _reap(pid: int, kill: bool) -> int | None:
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return None
        return status


def _describe(status: int | None, seconds: float, memory_mb: int) -> str:
    if status is None:
        return "it ended without an answer"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return f"it used more than {seconds:g} s of CPU time (an honest submission takes well under a second)"
        if sig == signal.SIGSEGV:
            return "the parser crashed (SIGSEGV): a file nested too deeply for it"
        if sig == signal.SIGKILL:
            return f"it was killed (SIGKILL), most likely for needing more than {memory_mb} MB of memory"
        return f"it was killed by signal {signal.Signals(sig).name}"
    return f"it exited with status {os.WEXITSTATUS(status)} without an answer"
