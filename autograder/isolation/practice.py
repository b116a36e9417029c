"""The practice path: the learner's code in a plain subprocess, where the confinement cannot run.

The grader's confinement (``sandbox.py``: a zygote forked from the grader, process
groups, resource limits, ``/proc``) needs Linux. On macOS and Windows, ``check()`` and the
self-check run each exercise in a fresh interpreter started with multiprocessing's *spawn*
(no fork: it works the same on every OS), under the exercise's time limit and nothing
else. It is a practice check, and every report made this way says so (:data:`LABEL`); final
grading (``mha-grade``, Gradescope) runs confined, on Linux.

:class:`SpawnZygote` has the methods the pipeline uses of ``sandbox.Zygote`` (``launch``,
``finish``, ``sweep``, ``close``), so ``runner.grade_submission`` and the self-check run
unchanged on it. One spare process, torch already imported, waits for the next exercise.
``MHA_CHECK_MODE=spawn`` forces this path on Linux (how CI tests it).
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import types

LABEL = "practice check, not confined"
READY_SECONDS = 120.0  # for a spawned interpreter to import torch and the drivers


def mode() -> str:
    """``"confined"`` (Linux) or ``"spawn"``; ``$MHA_CHECK_MODE`` chooses when set."""
    chosen = os.environ.get("MHA_CHECK_MODE", "").strip().lower()
    if chosen in ("confined", "spawn"):
        return chosen
    if chosen:
        raise ValueError(f"MHA_CHECK_MODE={chosen!r} is not 'confined' or 'spawn'")
    return "confined" if sys.platform.startswith("linux") else "spawn"


def learner_side(drivers: str = "autograder.isolation.drivers"):
    """The learner-side process handle for this OS: the confined zygote, or spawned processes."""
    if mode() == "spawn":
        return SpawnZygote(drivers)
    from . import sandbox  # deferred: check()'s client imports this module for mode() alone

    return sandbox.Zygote(drivers)


class SpawnZygote:
    """Fresh spawned interpreters, one per exercise, instead of the confined zygote's forks."""

    def __init__(self, drivers: str = "autograder.isolation.drivers"):
        import multiprocessing  # deferred: check()'s client imports this module for mode() alone

        self.drivers = drivers
        # For the report, as ``sandbox.Zygote.confinement`` (``confine.status``): nothing here.
        self.confinement = {"confined": False, "layers": [],
                            "why": f"{LABEL}: a plain subprocess with a time limit (spawn)"}
        self.context = multiprocessing.get_context("spawn")
        self.spare = None
        self.spare = self._spawn()

    def _spawn(self):
        ours, theirs = socket.socketpair()
        process = self.context.Process(target=_child, args=(theirs, self.drivers), daemon=True,
                                       name="mha-practice-child")
        process.start()
        theirs.close()
        return process, ours

    def launch(self, workdir: str = ""):
        """A child ready for its job: its imports done, so that the exercise's time limit
        counts the learner's code only."""
        from .exchange import Child  # deferred: check()'s client imports this module for mode() alone
        from .sandbox import ZygoteError  # deferred: as Child, for mode() alone

        process, sock = self.spare if self.spare is not None else self._spawn()
        self.spare = self._spawn()  # the next exercise's: its imports overlap this one's run
        sock.settimeout(READY_SECONDS)
        try:
            ready = sock.recv(1) == b"R"
        except OSError:
            ready = False
        if not ready:
            sock.close()
            process.kill()
            process.join()
            raise ZygoteError("a spawned process for your code did not start")
        child = Child(process.pid, sock, workdir)
        _PROCESSES[process.pid] = process
        return child

    def finish(self, child) -> int | None:
        """Kill what is left of the child; a POSIX wait status (None where there is none)."""
        process = _PROCESSES.pop(child.pid, None)
        child.sock.close()
        if process is None:
            return None
        if process.exitcode is None:
            process.join(0.2)  # it exits by itself once it has sent "done"
        if process.exitcode is None:
            if hasattr(os, "killpg"):
                try:
                    os.killpg(process.pid, signal.SIGKILL)  # its own group: grandchildren too
                except OSError:
                    pass
            process.kill()
            process.join()
        code = process.exitcode
        if os.name != "posix" or code is None:
            return None
        return -code if code < 0 else code << 8  # as os.waitpid reports it

    def sweep(self) -> bool:
        return True  # a spawned child runs one exercise and exits: nothing left to sweep

    def close(self) -> None:
        if self.spare is not None:
            process, sock = self.spare
            sock.close()
            process.kill()
            process.join()
            self.spare = None


_PROCESSES: dict = {}  # pid -> multiprocessing.Process of the children launched


class _RunOnce:
    """A spawned child never takes a second exercise: the pipeline's "reusable" is always no."""

    def holds(self) -> bool:
        return False


def _no_limits():
    """A stand-in for the POSIX ``resource`` module, for importing isolation/ on Windows."""
    module = types.ModuleType("resource")
    module.RLIM_INFINITY = -1
    module.getrlimit = lambda which: (-1, -1)
    module.setrlimit = lambda which, limits: None
    return module


def _child(sock: socket.socket, drivers_name: str) -> None:
    """A spawned child: import what exercises need, wait for one job, run it, exit."""
    code = 0
    try:
        if hasattr(os, "setpgid"):
            os.setpgid(0, 0)
        if "resource" not in sys.modules:
            try:
                import resource  # noqa: F401
            except ImportError:  # Windows: isolation/child.py imports it for limits this path never sets
                sys.modules["resource"] = _no_limits()
        from . import cases, package  # deferred: after the resource stand-in (Windows)
        from .zygote import preload  # deferred: after the resource stand-in too

        drivers = preload(drivers_name)
        sock.sendall(b"R")
        job = cases.next_job(sock)
        here = os.path.join(job["workdir"], str(job["exercise"]).replace("/", "_"))
        os.makedirs(here, exist_ok=True)
        os.chdir(here)
        tempfile.tempdir = here
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # what the learner prints goes nowhere: results use the socket
            os.dup2(devnull, fd)
        # The folder holding autograder/ (and the references, in a full checkout): off the path.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != root]
        sys.meta_path.insert(0, package.Blocker())  # no solutions, no judge: as in the confined child
        cases.run(sock, job, drivers, _RunOnce())
    except BaseException:  # noqa: BLE001  the grader sees the missing results as a crash
        code = 70
    finally:
        os._exit(code)
