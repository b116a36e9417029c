"""The class files a batch writes besides the reports: ``grades.csv`` (a row per learner of the
roster), the gradebook and feedback files, and the anonymised copies to share.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ...inert import learner, spreadsheet
from ...scoring import points
from ...spec import POINTS
from ..intake import controls
from . import feedback, summary
from ..rules.rows import max_total
from .. import files
from . import lms
from ..budget import CELL, share
from ..intake.gradescope_export import safe_name
from .. import similarity as sim


def exercise_columns(reports: dict[str, dict]) -> list[str]:
    ids = {e["id"] for r in reports.values() for e in r.get("exercises", [])}
    return [e for e in POINTS if e in ids] + sorted(ids - set(POINTS))


def grades_csv(rows: list[dict], reports: dict[str, dict], rename=None) -> str:
    """``grades.csv``: a row per learner, points per exercise, total (their sum), late penalty,
    adjustments, final, status, submission time and where it comes from (``time_source``:
    the export's metadata or the files' times); ``submitted_as``: the id the submission came
    with. ``rename``: the pseudonym of a learner id (``anonymous/``). A row's learner text
    (``shown``, ``shown_as``, ``error``: :class:`~autograder.inert.LearnerText`) is a cell each,
    escaped for a spreadsheet, within the learner's share of this file (:mod:`..budget`)."""
    columns = exercise_columns(reports)
    f = io.StringIO()
    w = csv.writer(f)
    w.writerow(["learner", "submitted_as", *columns, "total", "late_penalty", "adjustment", "final", "max_total",
                "status", "submitted_at", "time_source", "adjustments", "error", "canvas", "points_possible",
                "replaces"])
    for row in rows:
        budget = share("grades.csv")
        said = "; ".join(f"{a.exercise} {controls.signed(a.points)}: {a.reason}" for a in row["adjustments"])
        if rename is None:
            who = learner(row["shown"]).csv(budget, CELL)
            came = learner(row["shown_as"]).csv(budget, CELL)
        else:
            who, came = rename(row["id"]), rename(row["submitted_as"]) if row["submitted_as"] else ""
        w.writerow([who, came, *(points(row["parts"].get(c, 0.0)) for c in columns), points(row["score"]),
                    row["late"], points(row["adjusted"]), points(row["final"]), points(max_total(reports)),
                    row["status"], row["submitted"], row.get("time_source", ""), spreadsheet(said),
                    _error(row, budget, rename), canvas_cell(row),
                    points(row["possible"] if row.get("possible") is not None else max_total(reports)),
                    _replaces(row, rename)])
    return f.getvalue()


# An anonymous row's error and older submissions: their words name folders and files, which name
# the learner (Canvas's downloads are "<name>_<id>_..."), so the anonymous copy says only that they exist.
ANONYMOUS_ERROR = "error: its words are in grades.csv only (they may name the learner)"


def _error(row: dict, budget, rename) -> str:
    if rename is not None:
        return ANONYMOUS_ERROR if row["error"] else ""
    return learner(row["error"]).csv(budget)


def _replaces(row: dict, rename) -> str:
    older = row.get("older", [])
    if rename is not None:
        return f"{len(older)} older submission{'s' if len(older) != 1 else ''}" if older else ""
    return "; ".join(f"{folder} ({when.isoformat(timespec='seconds')})" for folder, when in older)


def canvas_cell(row: dict) -> str:
    """What Canvas gets for a row: its final (scaled to the assignment's points when given), or
    blank when the row gives no grade yet (held, not yet due, no trusted time)."""
    return "" if row.get("withheld") else points(row.get("scaled", row["final"]))


def write_class_files(out: Path, rows: list[dict], reports: dict[str, dict], assignment: str, seed: int,
                      possible: float | None = None) -> None:
    files.write_atomic(out / "grades.csv", grades_csv(rows, reports))
    canvas = [{"ids": r["canvas_ids"], "score": None if r.get("withheld") else r.get("scaled", r["final"])}
              for r in rows if r["on_roster"]]
    files.write_atomic(out / "canvas.csv", lms.canvas_csv(canvas, assignment,
                                                          possible if possible is not None else max_total(reports)))
    hidden = [str(seed), str(Path(out).resolve()), str(Path.cwd())]
    for row in rows:
        text = feedback.scrub(feedback.to_markdown(row["shown"], row["report"], row, assignment), hidden)
        md, html = (out / "feedback" / f"{file_name(row['id'])}{suffix}" for suffix in (".md", ".html"))
        if html.exists() and _holds(md, text):
            continue  # unchanged since the last run: its page is too (rendering all is most of a rerun)
        # The page first: a run stopped between the two leaves an .md that differs, redone next time.
        files.write_atomic(html, feedback.to_html(text, assignment, row["shown"]))
        files.write_atomic(md, text)


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def write_anonymous(out: Path, rows: list[dict], result, seed: int, stats) -> None:
    """``anonymous/``: grades, summary and similarity with each learner id replaced by a
    pseudonym (keyed by this folder's secret seed: stable between runs, not guessable)."""
    def rename(x):
        return lms.pseudonym(x, str(seed))

    reports = {r["id"]: r["report"] for r in rows if r["report"]}
    files.write_atomic(out / "anonymous" / "grades.csv", grades_csv(rows, reports, rename))
    files.write_atomic(out / "anonymous" / "summary.md", summary.to_markdown(stats, rename))
    if result.similarity is not None:
        files.write_atomic(out / "anonymous" / "similarity.md", sim.clusters_markdown(result.similarity, rename))


def file_name(learner: str) -> str:
    """A learner's feedback file's name: one rule with the reports' (``safe_name``)."""
    return safe_name(learner)
