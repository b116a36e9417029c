"""``mha-grade batch DIR --out OUT``: grade a whole class.

DIR holds one submission per learner, a folder, a ``.zip`` or a notebook named by the
learner's id; inside it the exercise files are found wherever they are
(:mod:`autograder.submission`). OUT receives:

* ``grades.csv``: a row per learner (every learner of ``--roster``, "no submission" when
  nothing came), points per exercise, total, late penalty, final score, status;
* ``canvas.csv``: the final scores in Canvas's gradebook import layout;
* ``feedback/<learner>.md`` and ``.html``: what to hand back to each learner
  (:mod:`autograder.classroom.feedback`: scores, diagnoses, what was graded; no paths, no seed);
* ``reports/<learner>.json``: the full report (instructors only);
* ``summary.md``, ``summary.png``: the class summary; ``similarity.md``/``.csv`` with
  ``--similarity``; ``anonymous/`` with ``--anonymize`` (the same, learner ids replaced);
* ``.seed`` (mode 0600): the seed of the randomized cases, drawn once for this folder;
  ``hashes.json``: what each grade was computed from.

Speed and safety come from the same design. The parent imports the grader (torch, the
solutions, the checks) once and forks ``--jobs`` graders from itself, so no submission pays
for those imports again. Each grader takes one submission at a time and grades it through the
isolated pipeline (``runner.grade_submission``: the learner's code never runs in the grader).
The parent gives every submission a wall-clock deadline; a grader that passes it, or dies,
is killed with its whole process group and replaced, and that learner gets an error report,
so one hostile submission costs only its own time. Graders die with the batch however it
dies (``PR_SET_PDEATHSIG``), and hold no other grader's pipe.

A grade is reused only when everything it was computed from is unchanged: the submission's
graded sources, the grader's own code and checks, the solutions, the seed and the options
(:func:`grader_fingerprint`, ``hashes.json``); ``--force`` grades everything again. Every file
is written atomically, so a batch killed at any point resumes where it stopped.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import multiprocessing
import os
import secrets
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field, is_dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

from .. import __version__
from ..spec import POINTS
from . import files, gradebook

DEFAULT_TIMEOUT = 360.0  # seconds per submission: a backstop above the pipeline's own run budget (300 s)
SKIP = ("__pycache__", ".ipynb_checkpoints", "__MACOSX")
PACKAGE = Path(__file__).resolve().parent.parent  # autograder/
SEED_FILE = ".seed"


class BatchError(Exception):
    """An unusable command: one line that names the problem (exit status 2, nothing written)."""


@dataclass
class Outcome:
    learner: str
    report: dict
    seconds: float
    skipped: bool = False
    error: str | None = None  # why the grader itself failed on this submission
    cpu: float = 0.0  # CPU seconds of the grader and its learner-side processes


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    wall: float = 0.0
    seed: int = 0
    similarity: object = None  # similarity.SimilarityResult with --similarity
    missing: list[str] = field(default_factory=list)  # roster learners without a submission

    @property
    def graded(self) -> int:
        return sum(not o.skipped for o in self.outcomes)


# --------------------------------------------------------------------------- submissions

def find_submissions(directory: Path) -> dict[str, Path]:
    """Learner id -> submission path: every sub-directory, ``.zip`` and ``.ipynb`` of DIR."""
    found = {}
    for p in sorted(Path(directory).iterdir()):
        if p.name.startswith(".") or p.name in SKIP or p.is_symlink():
            continue
        if p.is_dir():
            found[p.name] = p
        elif p.suffix.lower() in (".zip", ".ipynb") and p.is_file():
            found[p.stem] = p
    return found


def grader_fingerprint() -> str:
    """A hash of everything a grade depends on besides the submission: the grader's modules
    and checks (``autograder/`` but the class tools), the reference solutions and the stubs."""
    h = hashlib.sha256(__version__.encode())
    roots = [PACKAGE, PACKAGE.parent / "solutions", PACKAGE.parent / "mha_exercises"]
    for root in roots:
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(PACKAGE.parent).as_posix()
            if rel.startswith("autograder/classroom/") or "__pycache__" in rel:
                continue
            data = f.read_bytes()
            h.update(f"{rel}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def content_hash(path: Path) -> str:
    """The hash of what the grader reads from ``path`` (its graded sources), or of the reason
    it reads nothing."""
    from ..submission import SubmissionError, load

    try:
        return load(path).sha256
    except SubmissionError as err:
        return "unreadable:" + hashlib.sha256(str(err).encode()).hexdigest()


# ---------------------------------------------------------------------------------- seed

def resolve_seed(out: Path, given: int | None, say: Callable[[str], None]) -> int:
    """The seed of this output folder: drawn once, stored (0600), reused; ``--seed`` sets it."""
    f = Path(out) / SEED_FILE
    stored = None
    if f.exists():
        try:
            stored = int(f.read_text().strip())
        except (OSError, ValueError):
            say(f"{f} is damaged; a new seed is stored and every submission is graded again")
    if given is None and stored is not None:
        return stored
    seed = given if given is not None else secrets.randbits(63)
    if stored is not None and stored != seed:
        say(f"--seed differs from the seed stored in {f}: every submission is graded again with the new "
            f"seed, which replaces the stored one")
    if stored != seed:
        files.write_atomic(f, f"{seed}\n", mode=0o600)
    return seed


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

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when the batch dies, however it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pipe's EOF still stops an idle grader
        pass
    if os.getppid() != parent:  # the batch died before the request above was in place
        os._exit(1)


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


def _cpu() -> float:
    own, children = os.times()[:2], os.times()[2:4]
    return sum(own) + sum(children)


def _serve(conn, others, parent: int, grade: Callable, exercises, seed) -> None:
    """A forked grader: grade submissions sent over ``conn`` until told to stop."""
    _die_with_parent(parent)
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
            conn.send((learner, report, None, time.perf_counter() - start, _cpu() - cpu))
        except BaseException:  # noqa: BLE001  (a grader bug on one submission must not stop the batch)
            conn.send((learner, None, traceback.format_exc(limit=4), time.perf_counter() - start, _cpu() - cpu))


class _Grader:
    def __init__(self, ctx, grade, exercises, seed, others=()):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, daemon=True,
                                   args=(child, [o.conn for o in others], os.getpid(), grade, exercises, seed))
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
    graders: list[_Grader] = []
    for _ in range(max(1, min(n_jobs, len(queue)))):
        graders.append(_Grader(ctx, grade, exercises, seed, graders))
    outcomes = []

    def replace(i: int) -> None:
        graders[i].kill()
        graders[i] = _Grader(ctx, grade, exercises, seed, [g for j, g in enumerate(graders) if j != i])

    def finish(grader: _Grader, report: dict | None, error: str | None, seconds: float, cpu: float = 0.0) -> None:
        learner = grader.job[0]
        if report is None:
            report = error_report(learner, f"the grader failed on this submission: {error}", exercises, seed)
        outcome = Outcome(learner, report, seconds, error=error, cpu=cpu)
        outcomes.append(outcome)
        grader.job = None
        on_done(outcome)

    try:
        while queue or any(g.job for g in graders):
            for i, g in enumerate(graders):
                if g.job is None and queue:
                    job = queue.pop(0)
                    try:
                        g.send(*job)
                    except OSError:  # it died while idle: replace it and retry the job
                        queue.insert(0, job)
                        g.job = None
                        replace(i)
            busy = [g for g in graders if g.job]
            if not busy:
                continue
            now = time.perf_counter()
            next_deadline = min(g.started + timeout for g in busy)
            ready = wait([g.conn for g in busy], timeout=max(0.0, next_deadline - now))
            for i, g in enumerate(graders):
                if not g.job:
                    continue
                elapsed = time.perf_counter() - g.started
                if g.conn in ready:
                    try:
                        learner, report, error, seconds, cpu = g.conn.recv()
                        finish(g, report, error, seconds, cpu)
                        continue
                    except (EOFError, OSError):
                        why = "the grading process died (killed or crashed)"
                elif elapsed >= timeout:
                    why = f"grading took longer than {timeout:g} s and was stopped"
                else:
                    continue
                finish(g, None, why, elapsed)
                replace(i)
    finally:
        for g in graders:
            g.kill() if g.job else g.stop()
    return outcomes


# ----------------------------------------------------------------------------------- batch

def check_command(directory: Path, out: Path, jobs: int) -> dict[str, Path]:
    """The submissions of ``directory``, or BatchError naming why the command cannot be right."""
    directory, out = Path(directory), Path(out)
    if jobs < 1:
        raise BatchError(f"--jobs must be at least 1, not {jobs}")
    if not directory.is_dir():
        raise BatchError(f"{directory} is not a directory of submissions")
    d, o = directory.resolve(), out.resolve()
    if o == d or d in o.parents:
        raise BatchError(f"the output folder {out} is inside the class folder {directory}: "
                         "its files would be read as submissions; choose another --out")
    if o in d.parents:
        raise BatchError(f"the class folder {directory} is inside the output folder {out}; choose another --out")
    submissions = find_submissions(directory)
    if not submissions:
        raise BatchError(f"no submissions in {directory}: expected one folder, .zip or .ipynb per learner")
    return submissions


def run_batch(directory: Path, out: Path, *, jobs: int = 2, force: bool = False, similarity: bool = False,
              exercises: list[str] | None = None, seed: int | None = None, timeout: float = DEFAULT_TIMEOUT,
              grade: Callable | None = None, user: str | None = None, time_limit: float | None = None,
              roster: Path | None = None, late: gradebook.LatePolicy | None = None, anonymize: bool = False,
              assignment: str = "Multi-head attention", progress: bool = True, console=None) -> BatchResult:
    """Grade every submission of ``directory`` into ``out``; see the module docstring."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..submission import SubmissionError, load

    console = console or Console(stderr=True)

    def warn(message: str) -> None:
        console.print(f"mha-grade batch: {message}", style="yellow", markup=False, highlight=False)

    start = time.perf_counter()
    out = Path(out)
    submissions = check_command(directory, out, jobs)
    learners = gradebook.read_roster(roster) if roster else None  # before anything is written
    (out / "reports").mkdir(parents=True, exist_ok=True)
    files.clean_temporaries(out)
    files.clean_temporaries(out / "reports")
    seed = resolve_seed(out, seed, warn)
    hashes_file = out / "hashes.json"
    known = {} if force else files.read_json(hashes_file, warn) or {}
    if not isinstance(known, dict):
        warn(f"{hashes_file} does not hold a table of grades; every submission is graded again")
        known = {}
    key = {"grader": grader_fingerprint(), "seed": seed, "exercises": sorted(exercises) if exercises else None,
           "time_limit": time_limit}
    hashes, todo, result = {}, {}, BatchResult(seed=seed)
    loaded, refused = {}, {}
    for learner, path in submissions.items():
        try:
            loaded[learner] = load(path)
            sha = loaded[learner].sha256
        except SubmissionError as err:
            refused[learner] = str(err).replace(str(path), learner)
            sha = "unreadable:" + hashlib.sha256(refused[learner].encode()).hexdigest()
        hashes[learner] = {"sha256": sha, **key}
        report_file = out / "reports" / f"{learner}.json"
        if learner in refused:  # nothing to grade: its report says why, at no cost
            report = error_report(learner, refused[learner], exercises, seed)
            result.outcomes.append(Outcome(learner, report, 0.0, skipped=known.get(learner) == hashes[learner]))
            continue
        cached = files.read_json(report_file, warn) if known.get(learner) == hashes[learner] else None
        if isinstance(cached, dict) and "exercises" in cached:
            result.outcomes.append(Outcome(learner, cached, 0.0, skipped=True))
        else:
            todo[learner] = path

    def save(outcome: Outcome) -> None:
        _annotate(outcome.report, outcome.learner, loaded.get(outcome.learner))
        files.write_json(out / "reports" / f"{outcome.learner}.json", outcome.report)
        # Recorded as each one finishes: an interrupted batch resumes where it stopped.
        if outcome.error is None:
            known[outcome.learner] = hashes[outcome.learner]
        else:
            known.pop(outcome.learner, None)  # a grader failure is retried next time
        files.write_json(hashes_file, known)

    for o in result.outcomes:
        if o.learner in refused:
            save(o)
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, disable=not progress,
                  transient=False) as bar:
        task = bar.add_task("grading", total=len(todo), last="")
        if todo:
            def done(outcome: Outcome) -> None:
                bar.update(task, last=outcome.learner)
                save(outcome)
                bar.advance(task)
            result.outcomes += grade_all(todo, jobs, grade=grade or pipeline_grader(user, time_limit),
                                         exercises=exercises, seed=seed, timeout=timeout, on_done=done)
    result.outcomes.sort(key=lambda o: o.learner)
    reports = {o.learner: o.report for o in result.outcomes}
    rows = class_rows(reports, submissions, learners, late, warn, result)
    write_class_files(out, rows, reports, assignment, seed)

    from . import summary
    stats = summary.summarize(reports)
    files.write_atomic(out / "summary.md", summary.to_markdown(stats))
    summary.plot(stats, out / "summary.png")
    if progress:
        console.print(summary.to_table(stats))
    if similarity:
        from . import similarity as sim
        finder = sim.Similarity(out / ".similarity", warn=warn)
        code = {learner: finder.code(sub.sha256, sub.sources) for learner, sub in loaded.items()}
        result.similarity = finder.run(code)
        files.write_atomic(out / "similarity.md", sim.clusters_markdown(result.similarity))
        files.write_atomic(out / "similarity.csv", sim.clusters_csv(result.similarity))
        if progress:
            console.print(sim.clusters_table(result.similarity))
    if anonymize:
        write_anonymous(out, rows, result, seed)
    result.wall = time.perf_counter() - start
    return result


def _annotate(report: dict, learner: str, submission) -> None:
    """What the class files need in a report: the learner, what was graded (no machine paths)."""
    report["learner"] = learner
    report["submission"] = learner
    if submission is not None:
        report["intake"] = {"taken": list(submission.taken), "ignored": list(submission.ignored)}


# ------------------------------------------------------------------------------ class files

def class_rows(reports: dict[str, dict], submissions: dict[str, Path], roster, late, warn,
               result: BatchResult) -> list[dict]:
    """One row per learner: the roster's (in its order) or the submitters', with late penalties."""
    if roster is None:
        people = [gradebook.Learner(name, {}, (name,)) for name in sorted(reports)]
        owner = {name: name for name in reports}
    else:
        owner, strangers = gradebook.match_roster(roster, list(reports))
        if strangers:
            warn(f"not on the roster, graded but left out of canvas.csv: {', '.join(strangers)}")
        people = list(roster) + [gradebook.Learner(s, {}, (s,)) for s in strangers]
        for s in strangers:
            owner[s] = s
    by_person = {}
    for name, who in owner.items():
        by_person[who] = name
    rows = []
    for person in people:
        name = by_person.get(person.id)
        report = reports.get(name) if name else None
        row = {"learner": person, "id": person.id, "submission": name, "report": report,
               "on_roster": roster is None or person in roster}
        if report is None:
            result.missing.append(person.id)
            row.update(score=0.0, final=0.0, status="no submission", late="", submitted="")
        else:
            when, source = gradebook.submitted_at(submissions[name])
            score = float(report.get("score", 0.0))
            final, days, why = late.apply(score, when) if late else (score, 0.0, "")
            report["late"] = {"submitted_at": when.isoformat() if when else None, "source": source,
                              "days_late": round(days, 3), "penalty": why, "final_score": final}
            status = "error" if report.get("error") else ("late" if days > 0 else "graded")
            row.update(score=score, final=final, status=status, late=why,
                       submitted=when.isoformat(timespec="seconds") if when else "")
        rows.append(row)
    return rows


def exercise_columns(reports: dict[str, dict]) -> list[str]:
    ids = {e["id"] for r in reports.values() for e in r.get("exercises", [])}
    return [e for e in POINTS if e in ids] + sorted(ids - set(POINTS))


def grades_csv(rows: list[dict], reports: dict[str, dict], rename=lambda x: x) -> str:
    """``grades.csv``: a row per learner, points per exercise, total, penalty, final, status."""
    import csv
    import io

    columns = exercise_columns(reports)
    max_total = max((float(r.get("max_score", 0)) for r in reports.values()), default=float(sum(POINTS.values())))
    f = io.StringIO()
    w = csv.writer(f)
    w.writerow(["learner", *columns, "total", "late_penalty", "final", "max_total", "status", "submitted_at",
                "error"])
    for row in rows:
        report = row["report"] or {}
        scores = {e["id"]: e["score"] for e in report.get("exercises", [])}
        error = (report.get("error") or "").splitlines()[0] if report.get("error") else ""
        w.writerow([rename(row["id"]), *(_points(scores.get(c, 0.0)) for c in columns), _points(row["score"]),
                    row["late"], _points(row["final"]), _points(max_total), row["status"],
                    row["submitted"], error])
    return f.getvalue()


def write_class_files(out: Path, rows: list[dict], reports: dict[str, dict], assignment: str, seed: int) -> None:
    from . import feedback

    files.write_atomic(out / "grades.csv", grades_csv(rows, reports))
    max_total = max((float(r.get("max_score", 0)) for r in reports.values()), default=float(sum(POINTS.values())))
    canvas = [{"learner": r["learner"], "score": r["final"]} for r in rows if r["on_roster"]]
    files.write_atomic(out / "canvas.csv", gradebook.canvas_csv(canvas, assignment, max_total))
    hidden = [str(seed), str(Path(out).resolve()), str(Path.cwd())]
    for row in rows:
        text = feedback.scrub(feedback.to_markdown(row["id"], row["report"], row, assignment), hidden)
        safe = _file_name(row["id"])
        files.write_atomic(out / "feedback" / f"{safe}.md", text)
        files.write_atomic(out / "feedback" / f"{safe}.html",
                           feedback.to_html(text, f"{assignment}: feedback for {row['id']}"))


def write_anonymous(out: Path, rows: list[dict], result: BatchResult, seed: int) -> None:
    """``anonymous/``: grades, summary and similarity with each learner id replaced by a
    pseudonym (keyed by this folder's secret seed: stable between runs, not guessable)."""
    from . import similarity as sim

    def rename(x):
        return gradebook.pseudonym(x, str(seed))

    reports = {r["id"]: r["report"] for r in rows if r["report"]}
    files.write_atomic(out / "anonymous" / "grades.csv", grades_csv(rows, reports, rename))
    files.write_atomic(out / "anonymous" / "summary.md", (out / "summary.md").read_text())
    if result.similarity is not None:
        files.write_atomic(out / "anonymous" / "similarity.md", sim.clusters_markdown(result.similarity, rename))


def _file_name(learner: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in learner) or "_"


def _points(x: float) -> str:
    return f"{float(x):.2f}".rstrip("0").rstrip(".")


# ------------------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mha-grade batch", description=(
        "Grade every submission of DIR (one folder, .zip or .ipynb per learner, named by learner id) in "
        "parallel; write grades.csv, canvas.csv, a feedback file per learner and a class summary."))
    parser.add_argument("directory", type=Path, metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="OUT", help="output folder (not inside DIR)")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--force", action="store_true", help="grade again even the unchanged submissions")
    parser.add_argument("--similarity", action="store_true",
                        help="group submissions with near-identical exercise code (similarity.md)")
    parser.add_argument("--exercise", "-e", action="append", dest="exercises", metavar="ID",
                        help="grade only this exercise (repeatable)")
    parser.add_argument("--seed", type=int, help="seed of the randomized cases (default: drawn once for OUT, "
                                                 "stored in OUT/.seed and reused; keep it secret)")
    parser.add_argument("--roster", type=Path, metavar="FILE",
                        help="the class: one learner id per line, or a Canvas gradebook export (CSV)")
    parser.add_argument("--deadline", metavar="TIME", help="ISO 8601, e.g. 2026-03-01T23:59+01:00 (UTC if no zone)")
    parser.add_argument("--late-penalty", type=float, default=0.0, metavar="PERCENT",
                        help="percent of the score lost per started day late (with --deadline)")
    parser.add_argument("--late-cutoff", type=float, metavar="DAYS",
                        help="later than this many days after the deadline: 0 points")
    parser.add_argument("--assignment", default="Multi-head attention", help="the column name in canvas.csv")
    parser.add_argument("--anonymize", action="store_true", help="also write anonymous/ (ids replaced) to share")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds per submission before it is stopped (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="seconds per exercise (default: each exercise's own, 10 s): what a hang costs")
    parser.add_argument("--run-as", metavar="USER",
                        help="when run as root: run the learners' code as this unprivileged user")
    parser.add_argument("--unconfined", action="store_true",
                        help="grade even where the learners' code cannot be confined (trusted code only)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no tables")
    args = parser.parse_args(argv)

    def refuse(message: str) -> int:
        print(f"mha-grade batch: {message}", file=sys.stderr)
        return 2

    unknown = sorted(set(args.exercises or ()) - set(POINTS))
    if unknown:
        return refuse(f"unknown exercise id(s): {', '.join(unknown)}")
    late = None
    if args.deadline:
        try:
            late = gradebook.LatePolicy(gradebook.parse_time(args.deadline), args.late_penalty, args.late_cutoff)
        except ValueError as err:
            return refuse(f"--deadline: {err}")
    elif args.late_penalty or args.late_cutoff is not None:
        return refuse("--late-penalty and --late-cutoff need --deadline")
    if not 0 <= args.late_penalty <= 100:
        return refuse(f"--late-penalty is a percent per day, between 0 and 100, not {args.late_penalty:g}")
    from ..isolation import confinement

    confined, why = confinement(run_as=bool(args.run_as))
    if not confined and not args.unconfined:
        return refuse(f"the learners' code cannot be confined here ({why}); grade on a machine where it can, "
                      "or pass --unconfined for code you trust")
    try:
        result = run_batch(args.directory, args.out, jobs=args.jobs, force=args.force, similarity=args.similarity,
                           exercises=args.exercises, seed=args.seed, timeout=args.timeout, user=args.run_as,
                           time_limit=args.time_limit, roster=args.roster, late=late, anonymize=args.anonymize,
                           assignment=args.assignment, progress=not args.quiet)
    except (BatchError, gradebook.RosterError) as err:
        return refuse(str(err))
    n = len(result.outcomes)
    missing = f", {len(result.missing)} on the roster without a submission" if result.missing else ""
    print(f"{n} submissions ({result.graded} graded, {n - result.graded} unchanged{missing}) in "
          f"{result.wall:.1f} s -> {args.out / 'grades.csv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
