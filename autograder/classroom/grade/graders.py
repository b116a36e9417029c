"""The class's graders: forked processes, each grading one submission at a time through the
pipeline (its own learner-side zygote, reused), that die with the batch however it dies.

:func:`grade_all` hands submissions to ``jobs`` graders and gathers an Outcome per learner
(:mod:`.outcomes`); a grader that crashes or overruns its submission's time costs only that
submission. A submission whose grader raised (the machine out of processes, threads or
memory, say) is graded again, :data:`RETRIES` times, after a pause; its learner's report then
says what failed in a sentence of the grader's (never a traceback or a path of the
instructor's), and the traceback goes to the instructor (``Outcome.error``).
"""
from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import tempfile
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

from ...isolation import sandbox
from ...isolation.cleanup import remove_tree
from ...isolation.confine import die_with_parent
from .outcomes import Outcome, error_report, failure, report_dict

DEFAULT_TIMEOUT = 360.0  # seconds per submission: a backstop above the pipeline's own run budget (300 s)
RETRIES = 2  # more tries for a submission whose grader raised
RETRY_PAUSES = (1.0, 3.0)  # seconds before each: time for what exhausted the machine to end


# -------------------------------------------------------------------------------- graders

def pipeline_grader(user: str | None = None, time_limit: float | None = None,
                    zygotes: int | list = 0) -> Callable:
    """``runner.grade_submission`` with one learner-side zygote per grader, reused.

    Called in the parent: the grader's modules (torch, the solutions, the checks) are imported
    here, once, and inherited by every forked grader. Each grader keeps one zygote (the
    process that forks the confined children running a submission's exercises) for all its
    submissions: no submission pays for the learner side's imports. ``zygotes``: zygotes
    already started (``mha-grade`` forks them in its fresh image, before it reads the options),
    or how many to start now, before this process's own imports, so that theirs run beside
    it; the graders forked first take one each (:func:`grade_all`), a grader without one
    starts its own at its first submission. Reuse is safe because the zygote never runs
    learner code itself, kills every leftover process after each exercise, and no child
    outlives its submission.
    """
    # Those started here are fresh interpreters (fork=False), never forks of this process: a
    # forked zygote would hold the batch's state and hand the learner's children its pipes.
    early = list(zygotes) if isinstance(zygotes, list) else [sandbox.Zygote(user=user, fork=False)
                                                             for _ in range(zygotes)]
    from ...grading import exercises, judge, runner  # noqa: F401  # deferred: torch and the references, after the zygotes

    state: dict = {}
    released: list = []  # early zygotes handed to graders, for the parent to reap

    def grade(path, exercises=None, seed=0):
        if state.get("pid") != os.getpid():  # first call in this grader
            state.update(pid=os.getpid(), zygote=sandbox.Zygote(user=user, fork=False))
        # One child at a time: the other graders keep the cores busy, and a submission then
        # forks one child (a fork of the torch-sized zygote costs ~20 ms of CPU) instead of two.
        return runner.grade_submission(path, exercises=exercises, seed=seed, time_limit=time_limit,
                                       zygote=state["zygote"], parallel=1)

    def adopt(slot: int | None) -> None:
        """In a grader just forked: take early zygote ``slot`` (None: none), let go of the others."""
        for i, zygote in enumerate(early):
            if i == slot:
                state.update(pid=os.getpid(), zygote=zygote)
            else:
                zygote.control.close()  # its own grader's end must be the last one open
        early.clear()

    def release() -> None:
        """In the parent, once the first graders hold them: their ends only, and reap at the end."""
        for zygote in early:
            zygote.control.close()
        released.extend(early)
        early.clear()

    def reap() -> None:
        for zygote in released:  # its grader is done with it: whatever is left is killed and reaped
            zygote.close()
        released.clear()

    def close():  # the zygote is reaped here, so its CPU time is counted in this grader's
        if state.get("pid") == os.getpid():
            state.pop("zygote").close()
            state.clear()

    grade.close, grade.adopt, grade.release, grade.reap = close, adopt, release, reap
    return grade


def _cpu() -> float:
    own, children = os.times()[:2], os.times()[2:4]
    return sum(own) + sum(children)


def _serve(conn, others, parent: int, grade: Callable, exercises, seed, slot: int | None) -> None:
    """A forked grader: grade submissions sent over ``conn`` until told to stop."""
    die_with_parent(parent)
    getattr(grade, "adopt", lambda slot: None)(slot)
    for other in others:  # the other graders' pipe ends: holding them would keep those open
        try:
            other.close()
        except OSError:
            pass
    os.setpgid(0, 0)  # its own process group: the parent can kill it with everything it started
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            getattr(grade, "close", lambda: None)()
            return
        learner, path = job
        start, cpu = time.perf_counter(), _cpu()
        try:
            report = report_dict(grade(str(path), exercises=exercises, seed=seed))
            json.dumps(report)  # fail here, not in the parent, on anything that is not JSON data
            conn.send((learner, report, None, time.perf_counter() - start, _cpu() - cpu, None))
        except BaseException as err:  # noqa: BLE001  (a grader bug on one submission must not stop the batch)
            conn.send((learner, None, traceback.format_exc(limit=8), time.perf_counter() - start, _cpu() - cpu,
                       failure(err, 1 + RETRIES)))


class _Grader:
    def __init__(self, ctx, grade, exercises, seed, others=(), slot: int | None = None):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, daemon=True, args=(
            child, [o.conn for o in others], os.getpid(), grade, exercises, seed, slot))
        self.process.start()
        child.close()
        self.job: tuple[str, Path] | None = None
        self.started = 0.0

    def send(self, learner: str, path: Path) -> None:
        self.job, self.started = (learner, path), time.perf_counter()
        self.conn.send(self.job)

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.process.kill()
        self.process.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(5)
        if self.process.is_alive():
            self.kill()


def _remove_stale_folders() -> None:
    """The temporary folders of this user's batches that were killed (SIGKILL leaves no time to
    remove them): ``mha-batch-<pid>-*`` whose process is gone."""
    where = tempfile.gettempdir()
    try:
        entries = list(os.scandir(where))
    except OSError:
        return
    for entry in entries:
        parts = entry.name.split("-")
        if (len(parts) == 4 and parts[:2] == ["mha", "batch"] and parts[2].isdigit()
                and not os.path.exists(f"/proc/{parts[2]}") and entry.is_dir(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_uid == os.getuid()):
            remove_tree(entry.path)


def grade_all(jobs: dict[str, Path], n_jobs: int, *, grade: Callable | None = None, exercises=None,
              seed: int = 0, timeout: float = DEFAULT_TIMEOUT,
              on_done: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Grade ``jobs`` (learner -> path) on ``n_jobs`` forked graders; ``on_done`` per result."""
    grade = grade or pipeline_grader()
    ctx = multiprocessing.get_context("fork")
    # Every grader's temporary files (the learners' scratch folders) in one folder of the
    # batch's, removed at the end: a grader killed mid-submission cannot remove its own.
    # Traversable by a learner user (--run-as), who reaches its scratch folder through it.
    _remove_stale_folders()
    temporary, tempfile.tempdir = tempfile.tempdir, tempfile.mkdtemp(prefix=f"mha-batch-{os.getpid()}-")
    os.chmod(tempfile.tempdir, 0o711)
    # The graders share this process's pages (torch, the checks): frozen, the objects there
    # are never walked by a grader's garbage collector, which would copy every page it touched.
    gc.freeze()
    queue = list(jobs.items())
    later: list[tuple[float, tuple[str, Path]]] = []  # (when, job): submissions to try again
    tries: dict[str, int] = {}
    graders: list[_Grader] = []
    for slot in range(max(1, min(n_jobs, len(queue)))):
        graders.append(_Grader(ctx, grade, exercises, seed, graders, slot))
    getattr(grade, "release", lambda: None)()
    outcomes = []

    def replace(i: int) -> None:
        graders[i].kill()
        graders[i] = _Grader(ctx, grade, exercises, seed, [g for j, g in enumerate(graders) if j != i])

    def feed() -> None:
        """Each idle grader takes the next submission (one that died while idle is replaced)."""
        now = time.perf_counter()
        for when, job in [entry for entry in later if entry[0] <= now]:
            later.remove((when, job))
            queue.insert(0, job)
        for i, g in enumerate(graders):
            if g.job is None and queue:
                job = queue.pop(0)
                try:
                    g.send(*job)
                except OSError:  # it died while idle: replace it and retry the job
                    queue.insert(0, job)
                    g.job = None
                    replace(i)

    def finish(i: int, report: dict | None, error: str | None, seconds: float, cpu: float = 0.0,
               dead: bool = False, said: str | None = None) -> None:
        learner = graders[i].job[0]
        if report is None and said is not None and tries.get(learner, 0) < RETRIES:
            # The grader raised: perhaps the machine was out of threads for a moment (a
            # classmate's bomb before its cap, another program). Again, after a pause.
            later.append((time.perf_counter() + RETRY_PAUSES[min(tries.get(learner, 0), len(RETRY_PAUSES) - 1)],
                          graders[i].job))
            tries[learner] = tries.get(learner, 0) + 1
            graders[i].job = None
            feed()
            return
        if report is None:
            report = error_report(learner, said or f"the grader failed on this submission: {error}", exercises, seed)
        outcome = Outcome(learner, report, seconds, error=error, cpu=cpu)
        outcomes.append(outcome)
        graders[i].job = None
        if dead:
            replace(i)
        feed()  # its next submission first: no grader waits while this one's files are written
        on_done(outcome)

    try:
        while queue or later or any(g.job for g in graders):
            feed()
            busy = [g for g in graders if g.job]
            if not busy:
                if later:
                    time.sleep(max(0.0, min(when for when, _ in later) - time.perf_counter()))
                continue
            now = time.perf_counter()
            next_deadline = min([g.started + timeout for g in busy] + [when for when, _ in later])
            ready = wait([g.conn for g in busy], timeout=max(0.0, next_deadline - now))
            for i, g in enumerate(graders):
                if not g.job:
                    continue
                elapsed = time.perf_counter() - g.started
                if g.conn in ready:
                    try:
                        learner, report, error, seconds, cpu, said = g.conn.recv()
                        finish(i, report, error, seconds, cpu, said=said)
                        continue
                    except (EOFError, OSError):
                        why = "the grading process died (killed or crashed)"
                elif elapsed >= timeout:
                    why = f"grading took longer than {timeout:g} s and was stopped"
                else:
                    continue
                finish(i, None, why, elapsed, dead=True)
    finally:
        for g in graders:
            g.kill() if g.job else g.stop()
        getattr(grade, "reap", lambda: None)()
        remove_tree(tempfile.tempdir)
        tempfile.tempdir = temporary
    return outcomes
