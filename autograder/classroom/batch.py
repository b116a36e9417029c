"""``mha-grade batch DIR --jobs N --out OUT``: grade a whole class.

DIR holds one submission per learner, a sub-directory or a ``.zip`` named by the learner's id.
OUT receives ``grades.csv`` (a row per learner, a column per exercise, the total),
``reports/<learner>.json`` (the full report), ``summary.md`` and ``summary.png`` (the class
summary, :mod:`autograder.classroom.summary`), ``hashes.json`` (what each grade was computed from) and,
with ``--similarity``, ``similarity.csv``.

Speed and safety come from the same design. The parent imports the grader (torch, the
solutions, the checks) once and forks ``--jobs`` graders from itself, so no submission pays
for those imports again. Each grader takes one submission at a time and grades it through the
isolated pipeline (``runner.grade_submission``: the learner's code never runs in the grader).
The parent gives every submission a wall-clock deadline; a grader that passes it, or dies,
is killed with its whole process group and replaced, and that learner gets an error report,
so one hostile submission costs only its own time.

A submission whose content hash, grader version, seed and exercise selection are those
recorded in ``hashes.json`` keeps its report; ``--force`` grades everything again.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
import traceback
import zipfile
from dataclasses import asdict, dataclass, field, is_dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

from .. import __version__
from ..spec import POINTS

DEFAULT_TIMEOUT = 360.0  # seconds per submission: a backstop above the pipeline's own run budget (300 s)
SKIP = ("__pycache__", ".ipynb_checkpoints", "__MACOSX")


@dataclass
class Outcome:
    learner: str
    report: dict
    seconds: float
    skipped: bool = False
    error: str | None = None  # why the grader itself failed on this submission


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    wall: float = 0.0

    @property
    def graded(self) -> int:
        return sum(not o.skipped for o in self.outcomes)


# --------------------------------------------------------------------------- submissions

def find_submissions(directory: Path) -> dict[str, Path]:
    """Learner id -> submission path: every sub-directory, ``.zip`` and ``.ipynb`` of DIR."""
    found = {}
    for p in sorted(Path(directory).iterdir()):
        if p.name.startswith(".") or p.name in SKIP:
            continue
        if p.is_dir():
            found[p.name] = p
        elif p.suffix.lower() in (".zip", ".ipynb") and p.is_file():
            found[p.stem] = p
    return found


def content_hash(path: Path) -> str:
    """A hash of the submission's files (names and bytes; not timestamps), zip or directory."""
    h = hashlib.sha256()
    path = Path(path)
    if path.is_file() and path.suffix.lower() == ".zip":
        try:
            with zipfile.ZipFile(path) as z:
                for info in sorted(z.infolist(), key=lambda i: i.filename):
                    if not info.is_dir():
                        h.update(f"{info.filename}\0{info.CRC}\0{info.file_size}\0".encode())
            return h.hexdigest()
        except (zipfile.BadZipFile, OSError):
            pass  # an unreadable zip is hashed as bytes; grading reports why it is unreadable
    # Only what a grader can read (modules and notebooks, at most one folder down): a data
    # file or a virtualenv left in a learner's folder neither slows hashing nor forces a re-grade.
    files = [path] if path.is_file() else sorted(
        f for pattern in ("*.py", "*.ipynb", "*/*.py", "*/*.ipynb") for f in path.glob(pattern)
        if f.is_file() and not any(part in SKIP or part.startswith(".") for part in f.relative_to(path).parts)
    )
    for f in files:
        name = f.name if f == path else f.relative_to(path).as_posix()
        data = f.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


# ------------------------------------------------------------------------------- reports

def report_dict(report) -> dict:
    """The pipeline's Report as plain JSON data."""
    if isinstance(report, dict):
        return report
    for method in ("to_dict", "as_dict"):
        if hasattr(report, method):
            return getattr(report, method)()
    if is_dataclass(report):
        return asdict(report)
    raise TypeError(f"cannot turn a {type(report).__name__} into a report dict")


def error_report(learner: str, message: str, exercises: list[str] | None, seed: int) -> dict:
    """What a learner gets when the grader could not grade their submission at all."""
    ids = exercises or list(POINTS)
    return {
        "submission": learner, "score": 0.0, "max_score": float(sum(POINTS[e] for e in ids)),
        "error": message, "seed": seed, "grader_version": __version__,
        "exercises": [{"id": e, "status": "error", "score": 0.0, "max_score": float(POINTS[e]),
                       "cases": [], "feedback": message, "notes": []} for e in ids],
    }


# -------------------------------------------------------------------------------- graders

def pipeline_grader(user: str | None = None, time_limit: float | None = None) -> Callable:
    """``runner.grade_submission`` with one learner-side zygote per grader, reused.

    Called in the parent: the grader's modules (torch, the solutions, the checks) are imported
    here, once, and inherited by every forked grader. Each grader starts its zygote (the
    process that forks the confined children running a submission's exercises) at its first
    submission and keeps it: no submission pays for the learner side's imports either. Reuse
    is safe because the zygote never runs learner code itself, kills every leftover process
    after each exercise, and no child outlives its submission.
    """
    from ..grading import exercises, judge, runner  # noqa: F401
    from ..isolation import sandbox  # noqa: F401  (imported before the fork)

    state: dict = {}

    def grade(path, exercises=None, seed=0):
        if state.get("pid") != os.getpid():  # first call in this grader
            # A fresh interpreter (fork=False), never a fork of this grader: a forked zygote
            # would hand the learner's children this process's pipe to the batch parent.
            state.update(pid=os.getpid(), zygote=sandbox.Zygote(user=user, fork=False))
        return runner.grade_submission(path, exercises=exercises, seed=seed, time_limit=time_limit,
                                       zygote=state["zygote"])

    def close():  # the zygote is reaped here, so its CPU time is counted in this grader's
        if state.get("pid") == os.getpid():
            state.pop("zygote").close()
            state.clear()

    grade.close = close
    return grade


def _serve(conn, grade: Callable, exercises, seed) -> None:
    """A forked grader: grade submissions sent over ``conn`` until told to stop."""
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
        start = time.perf_counter()
        try:
            report = report_dict(grade(str(path), exercises=exercises, seed=seed))
            json.dumps(report)  # fail here, not in the parent, on anything that is not JSON data
            conn.send((learner, report, None, time.perf_counter() - start))
        except BaseException:  # noqa: BLE001  (a grader bug on one submission must not stop the batch)
            conn.send((learner, None, traceback.format_exc(limit=4), time.perf_counter() - start))


class _Grader:
    def __init__(self, ctx, grade, exercises, seed):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, grade, exercises, seed), daemon=True)
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


def grade_all(jobs: dict[str, Path], n_jobs: int, *, grade: Callable | None = None, exercises=None,
              seed: int = 0, timeout: float = DEFAULT_TIMEOUT,
              on_done: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Grade ``jobs`` (learner -> path) on ``n_jobs`` forked graders; ``on_done`` per result."""
    grade = grade or pipeline_grader()
    ctx = multiprocessing.get_context("fork")
    queue = list(jobs.items())
    graders = [_Grader(ctx, grade, exercises, seed) for _ in range(max(1, min(n_jobs, len(queue))))]
    outcomes = []

    def finish(grader: _Grader, report: dict | None, error: str | None, seconds: float) -> None:
        learner = grader.job[0]
        if report is None:
            report = error_report(learner, f"the grader failed on this submission: {error}", exercises, seed)
        outcome = Outcome(learner, report, seconds, error=error)
        outcomes.append(outcome)
        grader.job = None
        on_done(outcome)

    try:
        while queue or any(g.job for g in graders):
            for i, g in enumerate(graders):
                if g.job is None and queue:
                    try:
                        g.send(*queue.pop(0))
                    except OSError:  # it died while idle: replace it and retry the job
                        queue.insert(0, g.job)
                        g.kill()
                        graders[i] = _Grader(ctx, grade, exercises, seed)
            busy = [g for g in graders if g.job]
            now = time.perf_counter()
            next_deadline = min(g.started + timeout for g in busy)
            ready = wait([g.conn for g in busy], timeout=max(0.0, next_deadline - now))
            for i, g in enumerate(graders):
                if not g.job:
                    continue
                elapsed = time.perf_counter() - g.started
                if g.conn in ready:
                    try:
                        learner, report, error, seconds = g.conn.recv()
                        finish(g, report, error, seconds)
                        continue
                    except (EOFError, OSError):
                        why = "the grading process died (killed or crashed)"
                elif elapsed >= timeout:
                    why = f"grading took longer than {timeout:g} s and was stopped"
                else:
                    continue
                finish(g, None, why, elapsed)
                g.kill()
                graders[i] = _Grader(ctx, grade, exercises, seed)
    finally:
        for g in graders:
            g.kill() if g.job else g.stop()
    return outcomes


# ----------------------------------------------------------------------------------- batch

def run_batch(directory: Path, out: Path, *, jobs: int = 2, force: bool = False, similarity: bool = False,
              exercises: list[str] | None = None, seed: int = 0, timeout: float = DEFAULT_TIMEOUT,
              grade: Callable | None = None, user: str | None = None, time_limit: float | None = None,
              progress: bool = True,
              console=None) -> BatchResult:
    """Grade every submission of ``directory`` into ``out``; see the module docstring."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or Console(stderr=True)
    start = time.perf_counter()
    out = Path(out)
    (out / "reports").mkdir(parents=True, exist_ok=True)
    submissions = find_submissions(Path(directory))
    hashes_file = out / "hashes.json"
    known = json.loads(hashes_file.read_text()) if hashes_file.exists() and not force else {}
    key = {"grader_version": __version__, "seed": seed, "exercises": sorted(exercises) if exercises else None,
           "time_limit": time_limit}
    hashes, todo, result = {}, {}, BatchResult()
    for learner, path in submissions.items():
        hashes[learner] = {"sha256": content_hash(path), **key}
        report_file = out / "reports" / f"{learner}.json"
        if known.get(learner) == hashes[learner] and report_file.exists():
            result.outcomes.append(Outcome(learner, json.loads(report_file.read_text()), 0.0, skipped=True))
        else:
            todo[learner] = path

    def save(outcome: Outcome) -> None:
        outcome.report.setdefault("learner", outcome.learner)
        (out / "reports" / f"{outcome.learner}.json").write_text(json.dumps(outcome.report, indent=1))
        # Recorded as each one finishes: an interrupted batch resumes where it stopped.
        if outcome.error is None:
            known[outcome.learner] = hashes[outcome.learner]
        else:
            known.pop(outcome.learner, None)  # a grader failure is retried next time
        hashes_file.write_text(json.dumps(known, indent=1, sort_keys=True))
        bar.advance(task)

    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, disable=not progress,
                  transient=False) as bar:
        task = bar.add_task("grading", total=len(todo), last="")
        if todo:
            def done(outcome: Outcome) -> None:
                bar.update(task, last=outcome.learner)
                save(outcome)
            result.outcomes += grade_all(todo, jobs, grade=grade or pipeline_grader(user, time_limit),
                                         exercises=exercises, seed=seed, timeout=timeout, on_done=done)
    result.outcomes.sort(key=lambda o: o.learner)
    reports = {o.learner: o.report for o in result.outcomes}
    write_grades(out / "grades.csv", reports)

    from . import summary
    stats = summary.summarize(reports)
    (out / "summary.md").write_text(summary.to_markdown(stats))
    summary.plot(stats, out / "summary.png")
    if progress:
        console.print(summary.to_table(stats))
    if similarity:
        from . import similarity as sim
        pairs = sim.similar_pairs({learner: submissions[learner] for learner in reports})
        sim.write_csv(pairs, out / "similarity.csv")
        if progress:
            console.print(sim.to_table(pairs))
    result.wall = time.perf_counter() - start
    return result


def exercise_columns(reports: dict[str, dict]) -> list[str]:
    ids = {e["id"] for r in reports.values() for e in r.get("exercises", [])}
    return [e for e in POINTS if e in ids] + sorted(ids - set(POINTS))


def write_grades(path: Path, reports: dict[str, dict]) -> None:
    """``grades.csv``: learner, one column of points per exercise, total, and any grader error."""
    columns = exercise_columns(reports)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["learner", *columns, "total", "max_total", "error"])
        for learner, report in sorted(reports.items()):
            scores = {e["id"]: e["score"] for e in report.get("exercises", [])}
            w.writerow([learner, *(_points(scores.get(c, 0.0)) for c in columns),
                        _points(report.get("score", 0.0)),
                        _points(report.get("max_score", sum(POINTS.get(c, 0) for c in columns))),
                        (report.get("error") or "").splitlines()[0] if report.get("error") else ""])


def _points(x: float) -> str:
    return f"{float(x):.2f}".rstrip("0").rstrip(".")


# ------------------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mha-grade batch", description=(
        "Grade every submission of DIR (one sub-directory, .zip or .ipynb per learner, named by "
        "learner id) in parallel; write grades.csv, a JSON report per learner and a class summary."))
    parser.add_argument("directory", type=Path, metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="OUT")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--force", action="store_true", help="grade again even the unchanged submissions")
    parser.add_argument("--similarity", action="store_true",
                        help="list pairs of submissions with near-identical exercise code")
    parser.add_argument("--exercise", action="append", dest="exercises", metavar="ID",
                        help="grade only this exercise (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the randomized cases (keep it secret)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds per submission before it is stopped (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="seconds per exercise (default: each exercise's own, 10 s): what a hang costs")
    parser.add_argument("--run-as", metavar="USER",
                        help="when run as root: run the learners' code as this unprivileged user")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no tables")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        parser.error(f"{args.directory} is not a directory")
    unknown = sorted(set(args.exercises or ()) - set(POINTS))
    if unknown:
        parser.error(f"unknown exercise id(s): {', '.join(unknown)}")
    result = run_batch(args.directory, args.out, jobs=args.jobs, force=args.force, similarity=args.similarity,
                       exercises=args.exercises, seed=args.seed, timeout=args.timeout, user=args.run_as,
                       time_limit=args.time_limit,
                       progress=not args.quiet)
    n = len(result.outcomes)
    print(f"{n} submissions ({result.graded} graded, {n - result.graded} unchanged) in {result.wall:.1f} s "
          f"-> {args.out / 'grades.csv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
