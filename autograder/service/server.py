"""The service's half of ``check()``'s warm grader (``python -m autograder.service PID KIND``):
the learner-side process and the grader's modules, started once; then one exercise graded
per request read from its standard input, its report written to its standard output
(``channel.py``), and between requests the next exercise's references warmed."""
from __future__ import annotations

import importlib.util
import os
import signal
import sys

from ..isolation import frames
from ..isolation.confine import die_with_parent
from ..isolation.practice import learner_side, mode
from ..quick_exit import exit_now
from ..submission import MAX_SOURCE, MODULES, Submission, load
from . import GRADERS, GRADING, channel


class _Grader:
    """What the service does per request, for the full grader or the public self-check."""

    def __init__(self, kind: str):
        self.kind, self.spawned = kind, mode() == "spawn"
        # The learner-side process first, before any reference code is imported here (as the CLI).
        self.zygote = learner_side()
        if kind == "grade":
            grading = importlib.import_module(GRADING)
            self.runner, self.exercises = grading, grading.EXERCISES
        else:
            from .. import selfcheck  # deferred: a learner release's service alone runs it (numpy)

            self.selfcheck = selfcheck
        self.warm = iter(self.exercises.values()) if kind == "grade" else iter(())
        self.rehearsed = kind != "grade"

    def grade(self, request: dict) -> dict:
        exercise, sources, path = request.get("exercise"), request.get("sources"), request.get("path")
        limit = request.get("time_limit")
        if (type(exercise) is not str or type(sources) is not dict or type(path) is not str
                or not all(type(k) is str and k in MODULES and type(v) is str and len(v) <= MAX_SOURCE
                           for k, v in sources.items())
                or not (limit is None or type(limit) in (int, float) and 0 < limit <= 3600)):
            return {"error": "a malformed request"}
        submission = Submission(path, sources)
        try:
            if self.kind == "grade":
                report = self.runner.grade_submission(submission, exercises=[exercise], time_limit=limit,
                                                      zygote=self.zygote)
            else:
                report = self.selfcheck.check_submission(submission, [exercise], zygote=self.zygote)
        except ValueError as err:  # an unknown exercise id
            return {"error": str(err)}
        report.confinement = getattr(self.zygote, "confinement", report.confinement)  # what ran it
        out = report.to_dict()
        out["practice"] = self.spawned
        return {"report": out}

    def idle(self) -> bool:
        """One exercise's cases and reference outputs, ahead of its first check; False when
        there is nothing left to warm."""
        if not self.rehearsed:  # once: a first check pays no lazy import, on either side of the box
            self.rehearsed = True
            self._rehearse()
            return True
        exercise = next(self.warm, None)
        if exercise is None:
            return False
        self.runner.warm(exercise)
        return True

    def _rehearse(self) -> None:
        """Grade the reference ``softmax`` once, as a check would, and drop the report: the
        grader's lazily imported modules and the confined child's path are then warm when the
        learner's first check arrives (the set-up cell starts the service ahead of it)."""
        try:
            folder = next(iter(importlib.util.find_spec("solutions").submodule_search_locations))
            self.runner.grade_submission(load(folder), exercises=["softmax"], zygote=self.zygote)
        except Exception:  # noqa: BLE001  a rehearsal only: the real check reports any problem
            pass

    def close(self) -> None:
        self.zygote.close()


def serve(requests: int, replies: int, kind: str) -> None:
    grader = None
    try:
        grader = _Grader(kind)
        failure = None
    except Exception as err:  # noqa: BLE001  told to the kernel in reply to its request
        failure = f"the grader could not start: {type(err).__name__}: {err}"
    try:
        while True:
            # Between checks, the next exercise's references are warmed (not on Windows, where
            # a pipe cannot be polled: ``ready`` is always True there).
            if grader is not None:
                while not frames.ready(requests, 0) and grader.idle():
                    pass
            try:
                request = channel.receive(requests)
            except (EOFError, OSError, ValueError):
                return  # the kernel is gone, or its stream is past trusting
            if failure:  # said once; the next check starts a fresh service
                channel.send(replies, {"error": failure})
                return
            else:
                try:
                    reply = grader.grade(request if type(request) is dict else {})
                except Exception as err:  # noqa: BLE001  a bug of the grader's: said, not fatal
                    reply = {"error": f"the grader failed: {type(err).__name__}: {err}"}
            channel.send(replies, reply)
    finally:
        if grader is not None:
            grader.close()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parent, kind = int(argv[0]), argv[1]
    if kind not in GRADERS:
        sys.exit(f"autograder.service: unknown grader {kind!r}")
    die_with_parent(parent)  # Linux: the kernel's death kills this process, whatever it is doing
    # The kernel's interrupt (a learner stopping a cell) reaches its whole process group: it is
    # not meant for the service, which ends with its kernel (above) or its channel's end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The channel keeps descriptors of its own; 0 and 1 become harmless, so that nothing
    # printed here (a warning, a library's message) can corrupt it.
    requests, replies = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    serve(requests, replies, kind)
    exit_now(0)  # the kernel is gone or restarting it: no teardown to wait for

