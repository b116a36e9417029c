"""``mha-grade batch DIR --out OUT``: grade a whole class.

DIR holds one submission per learner, a folder, a ``.zip`` or a notebook named by the
learner's id; inside it the exercise files are found wherever they are
(:mod:`autograder.submission`). DIR may also be Gradescope's "Export Submissions", unzipped
(:mod:`.intake.gradescope_export`): its submissions are then named by the submitters' ids, with their
submission times. OUT receives the grades (``grades.csv``, ``canvas.csv``), each learner's
feedback and full report, the class summary, and what the next run needs (the whole list:
:mod:`.write.outputs`).

Speed and safety come from the same design. The parent imports the grader (torch, the
solutions, the checks) once and forks ``--jobs`` graders from itself, so no submission pays
for those imports again. Each grader takes one submission at a time and grades it through the
isolated pipeline (``runner.grade_submission``: the learner's code never runs in the grader).
The parent gives every submission a wall-clock deadline; a grader that passes it, or dies,
is killed with its whole process group and replaced, and that learner gets an error report,
so one hostile submission costs only its own time. Graders die with the batch however it
dies (``PR_SET_PDEATHSIG``), and hold no other grader's pipe. What needs no grader, reading
the class (:mod:`.intake`) and drawing the summary, is done by the process ahead
(:mod:`.ahead`) when the command runs as a program: the class is read while torch is imported.

A grade is reused only when everything it was computed from is unchanged: the submission's
graded sources, the grader's own code and checks, the solutions, the seed and the options
(:func:`grader_fingerprint`, ``hashes.json``); ``--force`` grades everything again. Every file
is written atomically, so a batch killed at any point resumes where it stopped.

``--shard i/N`` grades a stable part of the class into ``OUT/parts`` and ``mha-grade merge``
gathers the parts into the files one run writes (:mod:`.shards`); ``--progress-json`` says
how grading goes as JSON lines (:mod:`.progress`). Tables and the run's result go to stdout,
progress and warnings to stderr.

Exit status: 0 when every submission was graded (whatever the scores); 2 when the command
cannot be right (one line says why; nothing written); 3 (:data:`PARTIAL`) when some
submissions are held for an ambiguous identity (:mod:`.intake`: ``held.csv`` lists them)
while every other learner is graded and every file written.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import depends, isolation, stubs
from ..inert import LearnerText, excerpt, inert
from ..isolation import confine
from ..spec import POINTS
from . import files, intake, preflight, progress, shards
from .grade.graders import DEFAULT_TIMEOUT, grade_all, pipeline_grader
from .grade.outcomes import Outcome, error_report
from .intake import BatchError, previous
from .intake.roster import RosterError
from .intake import times
from .intake.times import parse_time
from .rules.late import LatePolicy
from .rules.rows import class_rows
from .write.outputs import annotate, write_outputs

PARTIAL = 3  # exit status: every file written, but some submissions held (held.csv)
GRADER_ERRORS = "grader-errors.log"  # the grader's tracebacks, for the instructor only
ERROR_CHARS = 20_000  # of one submission's traceback in it
WARNING_CHARS = 4000  # of one line the batch says


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    wall: float = 0.0
    seed: int = 0
    similarity: object = None  # similarity.SimilarityResult with --similarity
    missing: list[str] = field(default_factory=list)  # roster learners without a submission
    held: list[dict] = field(default_factory=list)  # submissions graded into nobody's row (intake)

    @property
    def graded(self) -> int:
        return sum(not o.skipped for o in self.outcomes)


# ---------------------------------------------------------------------- what a grade is for

def grader_fingerprint() -> str:
    """A hash of everything a grade depends on besides the submission (``depends.fingerprint``,
    the one the warm service and the reference outputs' cache use) and of the stubs, which
    decide what of a submission is the learner's own (a module equal to its stub gives way to a
    notebook) and what links nobody in ``--similarity``."""
    h = hashlib.sha256(depends.fingerprint("grade").encode())
    for f in sorted(stubs.FOLDER.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        data = f.read_bytes()
        h.update(f"mha_exercises/{f.relative_to(stubs.FOLDER).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


# ----------------------------------------------------------------------------------- batch

def run_batch(directory: Path, out: Path, *, jobs: int = 2, force: bool = False, similarity: bool = False,
              exercises: list[str] | None = None, seed: int | None = None, timeout: float = DEFAULT_TIMEOUT,
              grade: Callable | None = None, user: str | None = None, time_limit: float | None = None,
              roster: Path | None = None, late: LatePolicy | None = None, anonymize: bool = False,
              assignment: str = "Multi-head attention", progress: bool = True, console=None,
              zygotes: list | None = None, ahead=None, names_from_folders: bool = False,
              extensions: Path | None = None, adjustments: Path | None = None,
              allow_fewer: bool = False, shard: tuple[int, int] | None = None, merge: bool = False,
              events=None, tz: str | None = None, possible: float | None = None) -> BatchResult:
    """Grade every submission of ``directory`` into ``out``; see the module docstring.
    ``ahead``: the process that read the class while torch was imported (:mod:`.ahead`);
    ``shard``: grade only that part, into ``OUT/parts`` (:mod:`.shards`); ``merge``: grade
    nothing, the parts gathered into OUT give every grade; ``events``: a :class:`.progress.JsonLines`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or Console(stderr=True)

    def warn(message: str) -> None:
        # one line as written: not wrapped, and no ":email:" turned into an emoji; the ids and file
        # names in it are learners' (inert: no escape sequence reaches the instructor's terminal)
        console.print(f"mha-grade batch: {excerpt(message, WARNING_CHARS)}", style="yellow", markup=False,
                      highlight=False, emoji=False, soft_wrap=True)

    start = time.perf_counter()
    out = Path(out)
    command = (directory, out, jobs, roster, similarity, names_from_folders, extensions, adjustments)
    ready = ahead.prepared(intake.asked(*command, tz)) if ahead else None
    if ready is None:
        ready = intake.prepare(*command[:5], warn, *command[5:], intake.read_seconds(timeout), tz)
    else:  # read by the process ahead: what it had to say is said now, in order
        for message in ready.warnings:
            warn(message)
    _check_adjustments(ready, exercises, adjustments or out / intake.controls.ADJUSTMENTS)
    submissions, loaded, refused = ready.submissions, ready.loaded, ready.refused
    if shard is not None:  # a part of the class, in a folder of its own; the class files are the merge's
        seed = shards.shared_seed(out, seed)
        out = shards.folder(out, shard)
        submissions = {k: v for k, v in submissions.items() if shards.mine(k, shard)}
    else:
        previous.check_loss(out, ready, allow_fewer)  # before anything is written
        previous.check_roster_loss(out, ready, allow_fewer)
    if merge:
        seed = shards.gather(out, warn)
    (out / "reports").mkdir(parents=True, exist_ok=True)
    files.clean_temporaries(out)
    files.clean_temporaries(out / "reports")
    seed = previous.resolve_seed(out, seed, warn)
    hashes_file = out / "hashes.json"
    known = {} if force else files.read_json(hashes_file, warn) or {}
    if not isinstance(known, dict):
        warn(f"{hashes_file} does not hold a table of grades; every submission is graded again")
        known = {}
    key = {"grader": grader_fingerprint(), "seed": seed, "exercises": sorted(exercises) if exercises else None,
           "time_limit": time_limit}
    hashes, todo, result = {}, {}, BatchResult(seed=seed)
    for learner, path in submissions.items():
        sha = (loaded[learner].sha256 if learner in loaded
               else "unreadable:" + hashlib.sha256(refused[learner].encode()).hexdigest())
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
    if merge and todo:
        raise BatchError(f"{len(todo)} submission(s) no part graded as this merge asks (the same sources, grader, "
                         f"seed and options): {', '.join(sorted(todo)[:10])}{' ...' if len(todo) > 10 else ''}; "
                         "run their shards again with the options of this merge")
    if events is not None:
        events.start(len(submissions), len(todo))

    def save(outcome: Outcome) -> None:
        annotate(outcome.report, outcome.learner, loaded.get(outcome.learner))
        files.write_json(out / "reports" / f"{outcome.learner}.json", outcome.report)
        # Recorded as each one finishes: an interrupted batch resumes where it stopped.
        if outcome.error is None:
            known[outcome.learner] = hashes[outcome.learner]
        else:
            known.pop(outcome.learner, None)  # a grader failure is retried next time
            # The learner's report says what failed in a sentence; the details are the instructor's.
            # A traceback may quote the learner's words (a file's name, a message): inert, and cut.
            error = LearnerText(outcome.error, "the grader's traceback")
            with open(out / GRADER_ERRORS, "a", encoding="utf-8") as f:
                f.write(f"== {inert(outcome.learner)}\n{error_lines(error)}\n\n")
        files.write_json(hashes_file, known)

    for o in result.outcomes:
        if o.learner in refused:
            save(o)
    # One zygote started early per grader to come; those beyond the submissions to grade (or
    # all, when the caller brings its own grade function) are not needed.
    early = [] if grade else list(zygotes or [])[:len(todo)]
    for zygote in (zygotes or [])[len(early):]:
        zygote.close()
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, disable=not progress,
                  transient=False) as bar:
        task = bar.add_task("grading", total=len(todo), last="")
        if todo:
            def done(outcome: Outcome) -> None:
                bar.update(task, last=outcome.learner)
                save(outcome)
                bar.advance(task)
                if events is not None:
                    events.graded(outcome)
            grade = grade or pipeline_grader(user, time_limit, zygotes=early or min(jobs, len(todo)))
            result.outcomes += grade_all(todo, jobs, grade=grade, exercises=exercises, seed=seed,
                                         timeout=timeout, on_done=done)
    result.outcomes.sort(key=lambda o: o.learner)
    if shard is not None:
        shards.write_part(out, shard, seed, list(submissions))
        result.wall = time.perf_counter() - start
        if events is not None:
            events.end(result, out)
        return result
    rows = class_rows({o.learner: o.report for o in result.outcomes}, ready, late, result, possible)  # the rules
    result.held = ready.held
    write_outputs(out, result, ready, rows, assignment=assignment, similarity=similarity, anonymize=anonymize,
                  progress=progress, console=console, warn=warn, ahead=ahead, possible=possible)
    result.wall = time.perf_counter() - start
    if events is not None:
        events.end(result, out)
    return result


def _check_adjustments(ready, exercises: list[str] | None, path: Path) -> None:
    """BatchError naming the line of an adjustment for an exercise this assignment does not
    grade: applied nowhere, it would still be promised in the learner's feedback."""
    if not exercises:
        return
    for a in ready.adjustments:
        if a.exercise != intake.controls.TOTAL and a.exercise not in exercises:
            raise BatchError(f"{path}, line {a.line}: {a.exercise} is not an exercise of this assignment "
                             f"({', '.join(exercises)}): give another exercise, or total")


def error_lines(error: LearnerText) -> str:
    """A traceback for the grader-errors log: its lines kept, each inert, at most ``ERROR_CHARS``."""
    return "\n".join(line.terminal(cap=ERROR_CHARS) for line in error.lines()[:400]).rstrip()[:ERROR_CHARS]


# ------------------------------------------------------------------------------------- CLI

def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mha-grade batch", description=(
        "Grade every submission of DIR (one folder, .zip or .ipynb per learner, named by learner id; or "
        "Gradescope's Export Submissions, unzipped) in parallel; write grades.csv, canvas.csv, a feedback "
        "file per learner and a class summary. Exit status 0: graded; 2: the command cannot be right (nothing "
        "written); 3: some submissions held for an ambiguous identity (held.csv), every other file written."))
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
    parser.add_argument("--deadline", metavar="TIME", help="ISO 8601, e.g. 2026-03-01T23:59+01:00 (a time without "
                                                           "a zone is read in --tz, and refused without it)")
    parser.add_argument("--tz", metavar="ZONE", help="the course's time zone (IANA, e.g. America/Los_Angeles): a "
                                                   "deadline or extension written without a zone is read in it")
    parser.add_argument("--points", type=float, metavar="P",
                        help="the assignment's points in Canvas: canvas.csv, the history and the feedback show each "
                             "final scaled to P (final x P / the exercises' total), the raw points beside")
    parser.add_argument("--late-penalty", type=float, default=0.0, metavar="PERCENT",
                        help="percent of the score lost per started day late (with --deadline)")
    parser.add_argument("--late-cutoff", type=float, metavar="DAYS",
                        help="later than this many days after the deadline: 0 points")
    parser.add_argument("--extensions", type=Path, metavar="FILE",
                        help="CSV learner,deadline: a learner's own deadline (kept in OUT for the next runs)")
    parser.add_argument("--adjustments", type=Path, metavar="FILE",
                        help="CSV learner,exercise,points,reason: points added or taken after grading, shown in "
                             "the feedback (exercise: an id or 'total'; kept in OUT for the next runs)")
    parser.add_argument("--names-from-folders", action="store_true",
                        help="grade a Gradescope export whose submission_metadata.yml is damaged or missing, "
                             "each folder under its own name (otherwise an error)")
    parser.add_argument("--allow-fewer", action="store_true",
                        help="replace OUT's class files even when fewer learners have a submission than in "
                             "its last run (otherwise refused)")
    parser.add_argument("--assignment", default="Multi-head attention", help="the column name in canvas.csv")
    parser.add_argument("--anonymize", action="store_true", help="also write anonymous/ (ids replaced) to share")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds per submission before it is stopped (default {DEFAULT_TIMEOUT:g}); "
                             "reading its files, and fingerprinting them for --similarity, is stopped after "
                             f"this or {intake.read_seconds(float('inf')):g} s, whichever is less")
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="seconds per exercise (default: each exercise's own, 10 s): what a hang costs")
    parser.add_argument("--run-as", metavar="USER",
                        help="when run as root: run the learners' code as this unprivileged user")
    parser.add_argument("--unconfined", action="store_true",
                        help="grade even where the learners' code cannot be confined (trusted code only)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no tables")
    parser.add_argument("--shard", metavar="i/N",
                        help="grade only part i of N (from 0) into OUT/parts, for `mha-grade merge`; given N alone, "
                             "i is JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_ID (Slurm). Needs --seed "
                             "or a seed stored in OUT")
    parser.add_argument("--progress-json", metavar="FILE", nargs="?", const="-",
                        help="progress as JSON lines, one per event, on stderr (no FILE) or appended to FILE")
    return parser


def main(argv: list[str] | None = None, zygotes: list | None = None, ahead=None) -> int:
    """``zygotes``: learner-side processes ``mha-grade`` forked before reading the options;
    ``ahead``: the process it forked before importing torch, reading the class (:mod:`.ahead`)."""
    try:
        return _main(parser().parse_args(argv), zygotes, ahead)
    finally:
        if ahead is not None:
            ahead.close()


def merge_main(argv: list[str] | None = None) -> int:
    """``mha-grade merge DIR --out OUT [the batch's options]``: the parts of ``--shard`` runs
    gathered into the class files one run writes (:mod:`.shards`); grades nothing."""
    p = parser()
    p.prog = "mha-grade merge"
    p.description = ("Gather the parts that `mha-grade batch --shard i/N` wrote into OUT/parts and write the class "
                     "files one run writes; give the batch's options.")
    args = p.parse_args(argv)
    args.merge = True
    return _main(args, None, None)


def _main(args: argparse.Namespace, zygotes: list | None, ahead) -> int:

    def refuse(message: str) -> int:
        print(f"mha-grade batch: {excerpt(message, WARNING_CHARS)}", file=sys.stderr)
        return 2

    unknown = sorted(set(args.exercises or ()) - set(POINTS))
    if unknown:
        return refuse(f"unknown exercise id(s): {', '.join(unknown)}")
    try:
        zone = times.zone(args.tz)
    except ValueError as err:
        return refuse(f"--tz: {err}")
    if args.points is not None and not (args.points > 0 and math.isfinite(args.points)):
        return refuse(f"--points must be more than 0, not {args.points:g}")
    late = None
    if args.deadline:
        try:
            late = LatePolicy(parse_time(args.deadline, zone), args.late_penalty, args.late_cutoff)
        except ValueError as err:
            return refuse(f"--deadline: {err}")
    elif args.late_penalty or args.late_cutoff is not None or args.extensions:
        return refuse("--late-penalty, --late-cutoff and --extensions need --deadline")
    if not 0 <= args.late_penalty <= 100:
        return refuse(f"--late-penalty is a percent per day, between 0 and 100, not {args.late_penalty:g}")
    merge = getattr(args, "merge", False)
    try:
        shard = shards.parse(args.shard) if args.shard and not merge else None
    except BatchError as err:
        return refuse(str(err))
    confined, why = isolation.confinement(run_as=bool(args.run_as))
    if merge:
        confined, args.unconfined = True, True  # a merge runs no learner code
    hint = "" if merge else preflight.namespace_hint()  # the seccomp setting to change, if that is the cause
    if not confined and not args.unconfined:
        return refuse(f"the learners' code cannot be confined here ({why}); grade on a machine where it can, "
                      "or pass --unconfined for code you trust" + (f". {hint}" if hint else ""))
    capped, why = confine.bounded(run_as=bool(args.run_as))
    if not capped and not args.unconfined:
        return refuse(f"one learner's threads could starve the grader and the other learners here ({why}); "
                      "or pass --unconfined for code you trust" + (f". {hint}" if hint else ""))
    if hint:  # confined with what remains (a pids cgroup, Landlock, seccomp): said, not hidden
        print(f"mha-grade batch: confined without user namespaces (each learner's scratch is a capped file, not "
              f"a tmpfs of its own): {hint}", file=sys.stderr)
    try:
        events = progress.JsonLines.open(args.progress_json) if args.progress_json else None
    except OSError as err:
        return refuse(f"--progress-json {args.progress_json}: cannot write there ({err.strerror})")
    try:
        result = run_batch(args.directory, args.out, jobs=args.jobs, force=args.force, similarity=args.similarity,
                           exercises=args.exercises, seed=args.seed, timeout=args.timeout, user=args.run_as,
                           time_limit=args.time_limit, roster=args.roster, late=late, anonymize=args.anonymize,
                           assignment=args.assignment, progress=not args.quiet, zygotes=zygotes,
                           ahead=ahead, names_from_folders=args.names_from_folders, extensions=args.extensions,
                           adjustments=args.adjustments, allow_fewer=args.allow_fewer, shard=shard, merge=merge,
                           events=events, tz=args.tz, possible=args.points)
    except (BatchError, RosterError) as err:
        if events is not None:
            events.refused(excerpt(str(err), WARNING_CHARS))
        return refuse(str(err))
    finally:
        if events is not None:
            events.close()
    n = len(result.outcomes)
    missing = f", {len(result.missing)} on the roster without a submission" if result.missing else ""
    where = shards.folder(args.out, shard) if shard else args.out / "grades.csv"
    # what the run did: a result, on stdout with the tables (progress and warnings: stderr)
    print(f"{n} submissions ({result.graded} graded, {n - result.graded} unchanged{missing}) in "
          f"{result.wall:.1f} s -> {where}")
    failed = sum(1 for o in result.outcomes if o.error is not None and not o.skipped)
    if failed:
        print(f"the grader failed on {failed} submission(s), graded again at the next run: "
              f"details in {args.out / GRADER_ERRORS}", file=sys.stderr)
    if result.held:
        print(f"{len(result.held)} submission(s) held, graded into nobody's row (listed in {args.out / 'held.csv'}, "
              f"a reason each): every other learner is graded and every file written (exit status {PARTIAL})",
              file=sys.stderr)
        return PARTIAL
    return 0


if __name__ == "__main__":
    sys.exit(main())
