"""The zygote: the learner side's first process, which forks a confined child per request.

It imports NumPy, torch and the drivers once (:func:`preload`), finds once what every child
may read (``confine.Policy``) and takes the snapshot of pristine state the children compare
against, then serves the grader over its control socket (:func:`serve`). It never runs
learner code itself: it forks children, reaps them, and kills what they leave behind. It
dies with the grader (``PR_SET_PDEATHSIG``, and EOF on the control socket), and holds
neither the grader's arguments nor its environment: a fresh interpreter is started with a
minimal one, and a zygote forked from the grader is forked before the grader reads its
secrets (``isolation/reexec.py``) and scrubs what it inherited (:func:`scrub_environment`).
"""
from __future__ import annotations

import ctypes
import encodings.idna  # noqa: F401  socket calls import it lazily: once confined, a child may not read it
import gc
import importlib
import os
import signal
import socket
import struct
import sys

from . import child, confine, protocol
from .pristine import Pristine, children

# The environment a learner-side process keeps: what Python, NumPy and torch read, nothing
# of the instructor's (tokens, paths of the class folder, ...).
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
            "OPENBLAS_NUM_THREADS", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "MHA_GRADE_RUN_AS",
            "MHA_GRADE_NO_MEMORY_CGROUP")  # the last: the fallback's test forces it (budget.plan)


def main(argv=None) -> None:
    """``python -m autograder.isolation.worker CONTROL_FD [DRIVERS [GRADER_PID]]``: a zygote
    in a fresh interpreter."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 2:
        confine.die_with_parent(int(argv[2]))
    control = socket.socket(fileno=int(argv[0]))
    scrub_environment()
    serve(control, preload(argv[1] if len(argv) > 1 else "autograder.isolation.drivers"))


def scrub_environment() -> None:
    for name in list(os.environ):
        if name not in KEEP_ENV:
            del os.environ[name]


def preload(drivers_name: str = "autograder.isolation.drivers"):
    """What every child needs, imported once: NumPy, torch (one thread), the drivers.

    Returns the drivers module, or the exception that stopped its import (every case then
    fails as a crash with that message, and the grader's report says so).
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    import numpy  # noqa: F401
    import torch

    torch.set_num_threads(1)
    torch.ones(2).softmax(0)  # torch's lazy start-up (cpuinfo reads /proc), once, here
    protocol.capture_torch()
    try:
        return importlib.import_module(drivers_name)
    except Exception as err:
        return err


def serve(control: socket.socket, drivers) -> None:
    """The zygote's loop: fork a child per "F", reap and report per "W", until EOF."""
    _become_subreaper()
    # Taken here, where no learner code ever runs, and inherited by every child: copying
    # thousands of attributes is then paid once, not per child.
    namespaces = Pristine.namespaces()
    policy = confine.Policy()  # what every child may read, found once; its pids group, made once
    try:
        _serve(control, drivers, namespaces, policy)
    finally:
        policy.memory.close()
        policy.groups.close()


def _serve(control: socket.socket, drivers, namespaces, policy) -> None:
    # Nothing of the zygote's is ever collected: no object inherited from a grader it was
    # forked from closes a descriptor number reused since, and the children's collections
    # do not walk (and copy) the inherited pages.
    gc.freeze()
    control.sendall(b"R")  # ready
    active: set[int] = set()  # the exercise children alive now
    zygote = os.getpid()
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 16, 1)
        except OSError:
            return
        if not msg:
            return  # the grader is gone
        if msg[:1] == b"F" and fds:
            pid = os.fork()
            if pid == 0:
                control.close()
                child.run(socket.socket(fileno=fds[0]), drivers, namespaces, policy, zygote)  # never returns
            os.close(fds[0])
            try:
                os.setpgid(pid, pid)  # also done in the child: whichever runs first
            except OSError:
                pass
            active.add(pid)
            control.sendall(struct.pack("<q", pid))
        elif msg[:1] == b"K":  # between two exercises of a reused child: kill leftovers
            _kill_orphans(active)
            control.sendall(b"k")
        elif msg[:1] == b"W":  # reap a finished child, report how it ended, kill leftovers
            (pid,) = struct.unpack("<q", msg[1:9])
            active.discard(pid)
            try:
                _, status, usage = os.wait4(pid, 0)
                rss_mb = usage.ru_maxrss // 1024  # the kernel's peak resident memory, in kB
            except ChildProcessError:
                status, rss_mb = -1, 0
            _kill_orphans(active)
            refused = policy.groups.refused(pid)  # new threads its pids group refused
            kills, limit_mb, peak_mb = policy.memory.measured(pid)  # before its group goes
            policy.memory.release(pid)
            policy.groups.release(pid)
            control.sendall(struct.pack("<qqqqqq", status, refused, kills, limit_mb, peak_mb, rss_mb))
        else:
            for fd in fds:
                os.close(fd)


def _become_subreaper() -> None:
    """Orphans of the learner's code (a double fork, setsid) get re-parented to the zygote,
    which kills them after each exercise, instead of escaping to init."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def _kill_orphans(active: set) -> None:
    """SIGKILL every child of the zygote that is not a live exercise child, and reap it.

    Each is waited for before looking again: its own children are re-parented to the
    zygote only once it has died, and they are killed in the next round.
    """
    for _ in range(100):
        orphans = [pid for pid in children() if pid not in active]
        if not orphans:
            return
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in orphans:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

