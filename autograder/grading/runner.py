"""Grading a submission, top to bottom.

:func:`grade_submission` reads the submission, and for each selected exercise: draws its
seeded cases, runs them in a child of the zygote (the learner's side), and hands the
outputs to the judge (the grader's side), which compares them with the reference and
diagnoses. Exercises are pipelined: two children run at once (two cores), and the grader
judges exercise *i* while the children of the next exercises run.

A child runs one exercise at a time and takes the next only if it ended the last one
*reusable* (``isolation/pristine.py``: the learner's code left the process as it found it);
a child that crashed, hung, ran out of memory, sent garbage or changed its process is
killed with its process group, and the next exercise gets a fresh one. So a submission
costs two forks, not one per exercise, and a failure still costs only its own exercise.
Children never outlive their submission.

The learner's code never runs here. Here run the references: the judge's, and those of the
exercises the learner's code may call (``Exercise.uses``), answered over the child's socket
so that one mistake counts once.
"""
from __future__ import annotations

import importlib
import inspect
import os
import platform
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import torch

from .. import __version__, scoring
from ..isolation import exchange, protocol, sandbox
from ..isolation.budget import TASKS
from ..isolation.cleanup import remove_tree
from ..report import Report
from ..spec import MODULE_OF, Case, CaseError, Exercise, ExerciseResult
from ..submission import Submission, load
from . import cache, judge, proxied
from .exercises import EXERCISES, draw

DEFAULT_BUDGET = 300.0  # seconds for a whole run, whatever the per-exercise limits add up to
PARALLEL = 2  # learner-side children alive at once: the machine's two cores both busy
# A proxied call (the learner's code calling a used exercise) is costed and run in a killable
# worker: ``proxied.py`` (CALL_SECONDS, CALL_MB).


def grade_submission(path, exercises=None, seed: int = 0, time_limit: float | None = None,
                     budget: float | None = None, zygote: sandbox.Zygote | None = None,
                     parallel: int = PARALLEL) -> Report:
    """Grade the submission at ``path`` (a directory or a .zip) and return the report.

    ``exercises``: ids to grade (default: all that have checks). ``time_limit``: seconds per
    exercise, instead of each exercise's own. ``budget``: seconds for the whole run; the
    exercises it leaves no time for are reported as timed out. ``zygote``: a learner-side
    process already started (the CLI starts it first, to overlap the imports). ``parallel``:
    learner-side children at work at once (1 where other graders already use the cores).
    """
    started = time.monotonic()
    submission = path if isinstance(path, Submission) else load(path)
    selected = select(EXERCISES, exercises)
    own_zygote = zygote is None
    zygote = zygote or sandbox.Zygote()
    scratch = tempfile.mkdtemp(prefix="mha-grade-")
    run_deadline = started + (DEFAULT_BUDGET if budget is None else budget)
    try:
        results = imports_held_to_their_own_runs(
            _grade_all(zygote, submission, selected, seed, time_limit, run_deadline, scratch, parallel))
    finally:
        if own_zygote:
            zygote.close()
        remove_tree(scratch)  # what the learner made read-only too
    return Report(
        exercises=results,
        score=round(sum(r.score for r in results), 6),
        max_score=float(sum(r.max_score for r in results)),
        seed=seed,
        grader_version=__version__,
        submission=submission.path,
        submission_sha256=submission.sha256,
        versions=_versions(),
        wall_time=round(time.monotonic() - started, 3),
        graded_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        intake={"taken": list(submission.taken), "ignored": list(submission.ignored)},
    )


def imports_held_to_their_own_runs(results: list[ExerciseResult]) -> list[ExerciseResult]:
    """A child's record that another module did not import, held to that module's own runs: where
    an exercise of module M ran and one of its cases got past M's import (a result, or any error
    but "import"), M imports, and no other exercise's notes say it does not (a forged record once
    made the notes say that all 8 modules fail to import). A module none of whose exercises ran
    keeps its record: there is nothing of the grader's to hold it to."""
    imported = {MODULE_OF[r.id] for r in results if r.id in MODULE_OF and any(
        (c.cause or {}).get("kind") != "import" for c in r.cases)}
    for r in results:
        if not set(r.not_imported) & imported:
            continue
        r.not_imported = {m: why for m, why in r.not_imported.items() if m not in imported}
        r.notes = [n for n in r.notes if not any(n.startswith(f"your file {m}.py does not import") for m in imported)]
    return results


def select(exercises: dict[str, Exercise], ids) -> list[Exercise]:
    """The exercises to grade, in course order; ValueError naming an unknown id."""
    if not ids:
        return list(exercises.values())
    unknown = [i for i in ids if i not in exercises]
    if unknown:
        raise ValueError(f"no checks for exercise {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(exercises)}")
    return [e for e in exercises.values() if e.id in ids]


def case_rng(seed: int, exercise_id: str) -> np.random.Generator:
    """Each exercise its own stream, the grading one (``exercises/draw.py``: disjoint from the public draw)."""
    return draw.rng(seed, exercise_id)


_CASES: dict = {}  # (id(exercise), seed) -> (exercise, its cases)


def exercise_cases(exercise: Exercise, seed: int) -> list[Case]:
    """The exercise's cases for ``seed``, drawn once per process: every submission of a batch
    is graded on the same Case objects, so the judge computes each reference output once."""
    key = (id(exercise), seed)
    hit = _CASES.get(key)
    if hit is None or hit[0] is not exercise:  # the exercise kept with its cases: ids are reused
        if len(_CASES) >= 1024:
            _CASES.clear()
        # none shares a public case's inputs; drawn once per grader version and seed, then read from disk
        hit = _CASES[key] = (exercise, cache.cases(exercise, seed, lambda: draw.grading_cases(exercise, seed)))
    return hit[1]


def forget_cases() -> None:
    """Drop the drawn cases: the next grade draws them again (or reads them from disk)."""
    _CASES.clear()
    _FRAMES.clear()


_FRAMES: dict = {}  # id(cases) -> (the cases, their frame): encoded once, sent to every child


def _cases_frame(cases: list[Case]) -> bytes:
    hit = _FRAMES.get(id(cases))
    if hit is None or hit[0] is not cases:
        if len(_FRAMES) >= 64:
            _FRAMES.clear()
        hit = _FRAMES[id(cases)] = (cases, exchange.cases_frame([(c.driver, c.inputs) for c in cases]))
    return hit[1]


# ------------------------------------------------------------------------- the pipeline

@dataclass
class _Running:
    exercise: Exercise
    cases: list[Case]
    child: exchange.Child | None
    timeout: float
    proxies: dict
    early: list | None = None  # outputs decided without a child (budget spent)
    cpu: float = 0.0  # the child's CPU seconds when it took the job, then what the job cost
    refused_tasks: int = 0  # new threads the child's pids group refused (its thread cap)
    job: dict | None = None  # what the child was sent: a rerun sends the cases from one on
    sources: dict | None = None  # the submission's: what the grader reads itself (isolation/facts.py)
    not_imported: dict | None = None  # the children's record of modules that did not import


def _grade_all(zygote, submission, selected, seed, time_limit, run_deadline, scratch,
               parallel) -> list[ExerciseResult]:
    """Keep ``parallel`` children running; collect them in order, judging each while the next run."""
    # The slowest exercises (their longer time limits say which: chapter 6's model) start
    # first, so that with two children the rest runs beside them instead of after them.
    order = sorted(selected, key=lambda e: -e.timeout)
    results, queue, upcoming = [], deque(), iter(order)
    idle: list[exchange.Child] = []  # children that finished an exercise reusable
    launched = iter(range(10**9))  # numbers each child's scratch directory

    def start(job: dict) -> exchange.Child:
        """A child working on ``job``: an idle one if it still takes jobs, else a fresh one."""
        while idle:
            reused = idle.pop()
            # Its last exercise's leftovers killed first; a child that does not take the job
            # within the send timeout (its learner's code faked "done") is replaced.
            if zygote.sweep() and reused.start(dict(job, workdir=reused.workdir)):
                return reused
            zygote.finish(reused)
        workdir = f"{scratch}/{next(launched)}"
        os.makedirs(workdir, exist_ok=True)
        fresh = zygote.launch(workdir)
        fresh.start(dict(job, workdir=workdir))
        return fresh

    def fill():
        while len(queue) < parallel and (exercise := next(upcoming, None)) is not None:
            queue.append(_launch(start, submission, exercise, seed, time_limit, run_deadline))

    try:
        fill()
        # While the first children work, the rest's cases and reference outputs are made ready:
        # later, each exercise costs this process only its sending, receiving and judging.
        for exercise in order[len(queue):]:
            cache.warm(exercise, seed, exercise_cases(exercise, seed))
        while queue:
            run = queue.popleft()
            outputs = _outputs(zygote, run, run_deadline, idle, start)
            fill()  # the next exercise starts (in the child just freed if reusable) before this is judged
            results.append(_judge(run, outputs))
    finally:
        for c in idle + [r.child for r in queue if r.child is not None]:
            zygote.finish(c)
    order = {e.id: i for i, e in enumerate(selected)}
    return sorted(results, key=lambda r: order[r.id])


def _launch(start, submission: Submission, exercise: Exercise, seed, time_limit, run_deadline):
    cases = exercise_cases(exercise, seed)
    timeout = time_limit if time_limit is not None else exercise.timeout
    proxies = _proxies(exercise)
    if time.monotonic() >= run_deadline:
        early = [CaseError("timeout", "the run's time budget was used up before this exercise")] * len(cases)
        return _Running(exercise, cases, None, timeout, proxies, early)
    job = exchange.job(exercise.id, exercise.module, submission.sources, _cases_frame(cases),
                       exercise.memory_mb, timeout, proxies)
    child = start(job)
    cpu = child.cpu_seconds()
    cache.warm(exercise, seed, cases)  # reference outputs from disk, or computed while the child runs
    return _Running(exercise, cases, child, timeout, proxies, cpu=cpu, job=job, sources=submission.sources)


def _outputs(zygote, run: _Running, run_deadline, idle: list, start) -> list:
    """Every case's output or CaseError (``exchange.run_cases``: a case over its limit rerun
    once, each later case its own outcome; the errors held to the grader's own facts); each
    child back in ``idle`` if it can run another exercise, else killed and reaped."""
    if run.early is not None:
        return run.early
    # The clock starts when the grader turns to this child (it answers the child's calls to
    # proxied exercises only from then on): a head start is free, waiting is not charged.
    deadline = min(time.monotonic() + run.timeout, run_deadline)
    since, spent = {id(run.child): run.cpu}, [0.0]  # each child's CPU seconds when it took its job

    def begin(first: int) -> exchange.Child:
        child = start(dict(run.job, first=first))
        since[id(child)] = child.cpu_seconds()
        return child

    def release(child: exchange.Child, ended: str | None) -> int | None:
        spent[0] += max(0.0, child.cpu_seconds() - since.pop(id(child), 0.0))  # before the child is reaped
        if ended is None and child.reusable:
            idle.append(child)
            return None
        status = zygote.finish(child)
        run.refused_tasks += getattr(child, "refused_tasks", 0)
        return status

    outputs, run.not_imported = exchange.run_cases(
        run.child, begin, release, len(run.cases), deadline, proxied.answerer(run.proxies, run.cases, deadline), [c.timeout for c in run.cases],
        run.exercise.case_cpu, run.sources, module=run.exercise.module, exercise=run.exercise.id,
        seconds=run.timeout, run_deadline=run_deadline,
        optional=frozenset(i for i, c in enumerate(run.cases) if scoring.PROBE in (c.features or {})))
    run.cpu = spent[0]
    return outputs


def _proxies(exercise: Exercise) -> dict[str, str]:
    """The used exercises that can be proxied: functions (a class cannot cross a socket)."""
    out = {}
    for name in exercise.uses:
        reference = getattr(importlib.import_module(f"solutions.{MODULE_OF[name]}"), name, None)
        if inspect.isfunction(reference):
            out[name] = MODULE_OF[name]
    return out


def _judge(run: _Running, outputs: list) -> ExerciseResult:
    notes = []
    if run.proxies:
        names = list(run.proxies)
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        notes.append(f"graded with the reference {listed} (one mistake counts once)")
    if run.refused_tasks:
        notes.append(f"your code tried to start more threads than its process may have ({TASKS}): "
                     f"{run.refused_tasks} were refused")
    failed = dict(run.not_imported or {})  # the children's record, kept by _outputs
    notes += exchange.stand_in_notes(failed, run.exercise.module, run.sources)
    try:
        result = judge.judge_exercise(run.exercise, run.cases, outputs, notes)
        result.not_imported = failed
        if result.status == "not attempted":  # nothing of the learner's ran: no reference stood in
            result.notes = [n for n in result.notes if not n.startswith("graded with the reference")]
        result.cpu_seconds = round(run.cpu, 3)
        return result
    except Exception as err:  # a bug of the grader's: this exercise is reported, not the run lost
        return ExerciseResult(
            id=run.exercise.id, status="error", score=0.0, max_score=float(run.exercise.points),
            feedback=f"the grader failed on this exercise ({type(err).__name__}: {err}); "
                     "please report it", notes=notes,
        )


def _versions() -> dict[str, str]:
    return {"python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__}
