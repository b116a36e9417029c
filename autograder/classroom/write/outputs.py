"""What ``mha-grade batch`` writes into its output folder OUT, and when. OUT receives:

* ``grades.csv``: a row per learner (every learner of ``--roster``, "no submission" when
  nothing came), points per exercise, total, late penalty, final score, status, submission
  time and where it comes from (``time_source``: the export's metadata, or the files' times);
* ``canvas.csv``: the final scores in Canvas's gradebook import layout;
* ``feedback/<learner>.md`` and ``..html``: what to hand back to each learner
  (:mod:`autograder.classroom.write.feedback`: scores, diagnoses, what was graded; no paths, no seed);
* ``reports/<learner>.json``: the full report (instructors only);
* ``summary.md``, ``summary.png``: the class summary; ``similarity.md``/``..csv`` with
  ``--similarity``; ``anonymous/`` with ``--anonymize`` (the same, learner ids replaced);
* ``..seed`` (mode 0600): the seed of the randomized cases, drawn once for this folder;
  ``hashes.json``: what each grade was computed from;
* ``class.json``: how many learners this run graded; a later run that would grade fewer is
  refused before writing anything (``--allow-fewer`` replaces them); ``stale/``: the feedback
  and reports of learners an earlier run had and this one does not (:mod:`.runs`);
* ``held.csv``: the submissions held (their identity is ambiguous: :mod:`..intake`), a row
  each with its submitters and why; graded into nobody's row (the batch's exit status is 3);
* ``history.csv``: the first run's final scores, then each final score a later run changed
  (a learner added or removed too), with before, after and the reason (:mod:`.runs`);
* ``extensions.csv``, ``adjustments.csv``, ``roster.csv``: copies of ``--extensions``,
  ``--adjustments`` and ``--roster``, read again when a rerun does not give them, and said so
  (:mod:`..intake.controls`, :mod:`..intake`).

Every file names a learner by one id, the roster's where there is a roster (``grades.csv``'s
``submitted_as`` keeps the id the submission came with), and shows points by one rounding rule
(:func:`autograder.scoring.round_points`): the parts shown add up to the total shown. What a
learner wrote (ids, names, file names, the words of their errors) reaches these files only as
:class:`autograder.inert.LearnerText`, within that learner's share of each file (:mod:`..budget`).

The seed is drawn (or read) before anything is graded (:func:`..intake.previous.resolve_seed`); each report, with
``hashes.json``, as its grade comes in (:func:`annotate`: what the class files need in it);
the rest once every submission is graded (:func:`write_outputs`). Each file is written
atomically (:mod:`..files`).
"""
from __future__ import annotations

import csv
import io
import multiprocessing
from pathlib import Path

from ...inert import LearnerText, learner
from ..budget import CELL, share

from .. import files
from . import runs, summary
from .. import similarity as sim
from .classfiles import write_anonymous, write_class_files

def annotate(report: dict, learner: str, submission) -> None:
    """What the class files need in a report: the learner, what was graded (no machine paths)."""
    report["learner"] = learner
    report["submission"] = learner
    if submission is not None:
        # the pipeline's report says it already; an error report (grading failed) does not
        report.setdefault("intake", {"taken": list(submission.taken), "ignored": list(submission.ignored)})


def write_outputs(out: Path, result, ready, rows: list[dict], *, assignment: str, similarity: bool,
                  anonymize: bool, progress: bool, console, warn, ahead, possible: float | None = None) -> None:
    """The class's files of ``result`` (a ``batch.BatchResult``, its outcomes in order) into
    ``out``; ``ready``: what :mod:`..intake` read; ``rows``: a row per learner, the gradebook's
    rules applied (:func:`..rules.rows.class_rows`); ``ahead``: the process that may draw the
    summary (:mod:`..ahead`); ``warn``: says what the instructor should know."""
    reports = {o.learner: o.report for o in result.outcomes}
    stats = summary.summarize(reports, rows, ready.loaded)
    # matplotlib's import and drawing: the other core (imported ahead when there is a process ahead)
    drawing = (ahead.draw(stats, out / "summary.png") if ahead else None) or _beside(summary.plot, stats,
                                                                                      out / "summary.png")
    runs.log_changes(out, rows, warn)  # before grades.csv is replaced
    write_class_files(out, rows, reports, assignment, result.seed, possible)
    files.write_atomic(out / HELD, held_csv(ready.held))
    for name, text in ready.controls.items():  # kept for the next run (controls.py)
        files.write_atomic(out / name, text)
    runs.move_stale(out, rows, ready.submissions, warn)
    runs.record(out, ready)
    files.write_atomic(out / "summary.md", summary.to_markdown(stats))
    misnamed = [name for name, _ in stats.problems.get(summary.MISNAMED, [])]
    if misnamed:
        warn(f"misnamed files in {len(misnamed)} submission(s), taken or named in a \"did you mean\" in their "
             f"feedback (listed in summary.md): {', '.join(misnamed[:10])}"
             + (f" and {len(misnamed) - 10} more" if len(misnamed) > 10 else ""))
    tables = _stdout() if progress else None  # tables are the run's result: stdout; progress and warnings: stderr
    if progress:
        tables.print(summary.to_table(stats))
    if similarity:
        sim.save(out / ".similarity", ready.fingerprints)
        result.similarity = ready.similar
        files.write_atomic(out / "similarity.md", sim.clusters_markdown(result.similarity))
        files.write_atomic(out / "similarity.csv", sim.clusters_csv(result.similarity))
        if progress:
            tables.print(sim.clusters_table(result.similarity))
    if anonymize:
        write_anonymous(out, rows, result, result.seed, stats)
    drawing.join()
    if drawing.exitcode != 0:
        warn(f"{out / 'summary.png'} could not be drawn (exit status {drawing.exitcode}); "
             "the other files are complete")


HELD = "held.csv"


def held_csv(held: list[dict]) -> str:
    """``held.csv``: a row per held submission: its own name, its submitters as they gave
    themselves (learner text: escaped for a spreadsheet, within a share), why it is held."""
    text = io.StringIO()
    w = csv.writer(text)
    w.writerow(["submission", "submitters", "reason"])
    for h in held:
        budget = share(HELD)
        w.writerow([learner(LearnerText(h["submission"], "submission's own name")).csv(budget, CELL),
                    " + ".join(learner(LearnerText(s, "submitter id")).csv(budget, CELL) for s in h["submitters"]),
                    learner(LearnerText(h["reason"], "why held, naming ids")).csv(budget)])
    return text.getvalue()


def _stdout():
    from rich.console import Console

    return Console()


def _beside(function, *args):
    """``function(*args)`` in a forked process, started now (join it)."""
    process = multiprocessing.get_context("fork").Process(target=function, args=args, daemon=True)
    process.start()
    return process
