"""The grader's handle on the learner's processes (the code that runs there is worker.py;
how the kernel confines it, confine.py).

:class:`Zygote` starts the learner-side process. From the CLI, before any reference code is
imported, it imports torch in this process and forks the zygote from it (one torch import
serves both sides); otherwise it starts ``python -m autograder.isolation.worker``, a fresh interpreter
holding nothing of the grader's. :meth:`Zygote.launch` gets a forked child, talking to the
grader over a private socket; :meth:`Child.start` sends it one exercise's job and
:meth:`Child.collect` answers its calls to proxied exercises and gathers one output per case
until the deadline (``exchange.py``). A child that ends an exercise *reusable* (its process state untouched by
the learner's code, see ``pristine.Pristine``) may take the next exercise of the same
submission, after :meth:`Zygote.sweep` has killed whatever the last one left running; any
other child, and every child at the end of a submission, goes to :meth:`Zygote.finish`,
which kills its whole process group (grandchildren included) and learns how it ended. A
dead zygote is restarted by the next launch.
"""
from __future__ import annotations

import gc
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from autograder import REFERENCES, within

from . import budget, confine
from .exchange import Child, Memory

ROOT = Path(__file__).resolve().parents[2]




class ZygoteError(Exception):
    """The learner-side process could not be started or reached."""


def learner_ids(user: str | None) -> tuple[int, int] | None:
    """(uid, gid) the learner's children drop to: ``user`` or ``$MHA_GRADE_USER``, only when
    the grader runs as root (as on Gradescope); None otherwise (nothing to drop)."""
    import pwd

    user = user or os.environ.get("MHA_GRADE_USER")
    if not user or os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise ZygoteError(f"no user {user!r} to run the learner's code as (useradd it first)") from None
    if entry.pw_uid == 0:
        raise ZygoteError(f"user {user!r} is root: the learner's code must run unprivileged")
    return entry.pw_uid, entry.pw_gid


class Zygote:
    def __init__(self, drivers: str = "autograder.isolation.drivers", user: str | None = None, fork: bool = True):
        """``fork``: when this process holds no reference code yet (the CLI, before it imports
        the judge), import torch here once and fork the zygote from it: one torch import in
        all instead of two, which is what a loaded machine notices. Otherwise (the judge or
        ``solutions`` already imported, as in the tests) a fresh interpreter."""
        self.drivers, self.fork = drivers, fork
        # The zygote stays root (it has to read the harness and kill its children); each
        # child drops to this user before any learner code runs (child.drop_privileges).
        self.run_as = learner_ids(user)
        # What confines the learner's code here, for the report (confine.status).
        self.confinement = confine.status(run_as=self.run_as is not None)
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.start()

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.fork and not _references_loaded():
            self.process = _fork_zygote(theirs, ours, self.drivers, self.run_as)
        else:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autograder.isolation.worker", str(theirs.fileno()), self.drivers,
                 str(os.getpid())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=learner_environment(self.run_as), cwd=str(ROOT),
            )
        theirs.close()
        self.control, self._ready = ours, False
        _OPEN.append(ours)

    def _wait_ready(self, timeout: float = 60.0) -> None:
        if self._ready:
            return
        self.control.settimeout(timeout)
        try:
            if self.control.recv(1) != b"R":
                raise ZygoteError("the learner-side process exited while starting")
        except (socket.timeout, OSError) as err:
            raise ZygoteError(f"the learner-side process did not start: {err}") from None
        self._ready = True

    def launch(self, workdir: str = "") -> "Child":
        """A fresh child (``workdir``: its scratch directory); restarts a dead zygote once."""
        for attempt in (1, 2):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self._wait_ready()
                socket.send_fds(self.control, [b"F"], [theirs.fileno()])
                self.control.settimeout(30)
                (pid,) = struct.unpack("<q", _recv_exactly(self.control, 8))
                return Child(pid, ours, workdir)
            except (OSError, ZygoteError, struct.error):
                ours.close()
                if attempt == 2:
                    raise
                self.restart()
            finally:
                theirs.close()
        raise AssertionError("unreachable")

    def finish(self, child: "Child") -> int | None:
        """Kill what is left of the child's process group; its wait status (None if unknown).
        ``child.refused_tasks``: how many new threads its pids group refused (0 without one);
        ``child.memory``: what the kernel counted of its memory (``exchange.Memory``)."""
        for kill in (os.killpg, os.kill):  # the group, and the child if it left its group
            try:
                kill(child.pid, signal.SIGKILL)
            except OSError:
                pass
        child.sock.close()
        child.forget()
        try:
            self.control.settimeout(10)
            self.control.sendall(b"W" + struct.pack("<q", child.pid))
            status, child.refused_tasks, kills, limit_mb, peak_mb, rss_mb = struct.unpack(
                "<qqqqqq", _recv_exactly(self.control, 48))
            child.memory = Memory(None if kills < 0 else kills, limit_mb or None, peak_mb or None, rss_mb or None)
            return None if status < 0 else status
        except (OSError, struct.error):
            self.restart()  # the learner's code killed the zygote: a fresh one for the rest
            return None

    def sweep(self) -> bool:
        """Kill the processes the last exercise left behind (orphans the zygote inherited),
        before a reused child runs the next; False if the zygote did not answer."""
        try:
            self.control.settimeout(10)
            self.control.sendall(b"K")
            return _recv_exactly(self.control, 1) == b"k"
        except OSError:
            self.restart()
            return False

    def restart(self) -> None:
        self.close()
        self.start()

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            if self.control in _OPEN:
                _OPEN.remove(self.control)
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process is not None:  # a zygote killed before it removed its pids group
            budget.forget(self.process.pid)


def learner_environment(run_as) -> dict:
    """The environment of a fresh learner-side interpreter: what Python needs to start and
    find the grader, one thread for the libraries, and nothing of the instructor's."""
    from .zygote import KEEP_ENV  # deferred: POSIX only (resource); practice.py imports sandbox on Windows

    env = {k: os.environ[k] for k in KEEP_ENV + ("PYTHONHOME", "LD_LIBRARY_PATH") if k in os.environ}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("MHA_GRADE_RUN_AS", None)
    if run_as:
        env["MHA_GRADE_RUN_AS"] = "%d:%d" % run_as
    return env


def _references_loaded() -> bool:
    """Whether reference code (which a forked zygote would carry in memory) is imported here."""
    return any(within(name, REFERENCES) for name in sys.modules)


def _fork_zygote(control: socket.socket, ours: socket.socket, drivers: str, run_as) -> "_Forked":
    from . import zygote  # deferred: POSIX only (resource); practice.py imports sandbox on Windows

    loaded = zygote.preload(drivers)  # in this process: the grader needs torch too
    grader = os.getpid()
    # What is imported so far is shared with the zygote page by page; a collection in this
    # process would write to every object it walks and copy those pages (0.1 s of a grade).
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # the zygote: nothing of the grader's beyond what it had imported so far
        try:
            confine.die_with_parent(grader)
            sys.argv[1:], sys.orig_argv[1:] = [], []
            zygote.scrub_environment()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            for sock in [ours, *_OPEN]:  # the grader's ends: EOF must reach the zygote
                sock.close()
            _close_inherited(keep=control.fileno())
            os.environ.pop("MHA_GRADE_RUN_AS", None)
            if run_as:  # read by each child (child.drop_privileges), as in the spawned zygote
                os.environ["MHA_GRADE_RUN_AS"] = "%d:%d" % run_as
            zygote.serve(control, loaded)
        finally:
            os._exit(0)
    return _Forked(pid)


_OPEN: list = []  # the control sockets of this process's zygotes: a forked zygote closes them


def _close_inherited(keep: int) -> None:
    """Close every descriptor above 2 but ``keep``: whatever the grader had open (a report
    file, a pipe to its parent) must not reach the learner's children. Python objects of the
    grader's that still name a closed descriptor are never used or collected in the zygote
    (``zygote.serve`` freezes the garbage collector's view of them)."""
    top = max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1
    os.closerange(3, keep)
    os.closerange(keep + 1, max(top, keep + 1))


class _Forked:
    """The few Popen methods used here, for a zygote forked from this process."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def wait(self):
        while self.poll() is None:
            time.sleep(0.005)
        return self.returncode


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("end of stream")
        data += chunk
    return data


def clock() -> float:
    return time.monotonic()
