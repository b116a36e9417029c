"""The class files a batch writes besides the reports: ``grades.csv`` (a row per learner of the
roster), the gradebook and feedback files, and the anonymised copies to share.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ..inert import LearnerText, learner, spreadsheet
from ..scoring import points, round_points, shown_total
from ..spec import POINTS
from . import controls, feedback, files, gradebook, summary
from .budget import CELL, share
from .gradescope_export import safe_name
from . import similarity as sim


def class_rows(reports: dict[str, dict], ready, late, result) -> list[dict]:
    """One row per learner (``ready.people``): the roster's, in its order, or the
    submitters'. A submission is its submitters' (a Gradescope export's group has several, who
    share its report). Every number a row shows follows one rounding rule
    (:func:`autograder.scoring.round_points`): the exercise points are rounded, the total is
    their sum, the late penalty applies to that total, the adjustments come after."""
    by_person = {ready.owner[who.id]: name for name, who_ in ready.claims.items() for who in who_}
    adjustments = {}
    for a in ready.adjustments:
        adjustments.setdefault(a.learner, []).append(a)
    export = ready.export
    rows, maximum = [], _max_total(reports)
    for person in ready.people:
        name = by_person.get(person.id)
        report = reports.get(name) if name else None
        row = {"learner": person, "id": person.id, "submission": name, "report": report,
               "submitted_as": ready.own.get(name, "") if name else "",
               "on_roster": ready.learners is None or person in ready.learners,
               "adjustments": adjustments.get(person.id, []), "parts": {}, "adjusted": 0.0,
               "max_total": maximum, "effective": {},  # effective: id(adjustment) -> points it changed
               # what the writers show of the learner: learner text, never a plain str (inert.LearnerText)
               "shown": LearnerText(person.id, "learner id"),
               "shown_as": LearnerText(ready.own.get(name, "") if name else "", "submission's own name"),
               "canvas_ids": {c: LearnerText(v, "Canvas column") for c, v in
                              (person.canvas or {"Student": person.id, "SIS User ID": person.id}).items()},
               "error": LearnerText((report or {}).get("error", "").split("\n")[0] if report else "",
                                    "the grader's refusal, naming the learner's files"),
               "time_source": ""}
        if report is None:
            result.missing.append(person.id)
            row.update(score=0.0, final=0.0, status="no submission", late="", submitted="")
        else:
            parts = {e["id"]: round_points(float(e.get("score", 0.0))) for e in report.get("exercises", [])}
            maxima = {e["id"]: float(e.get("max_score", 0.0)) for e in report.get("exercises", [])}
            for a in row["adjustments"]:
                if a.exercise in parts:
                    before = parts[a.exercise]
                    parts[a.exercise] = round_points(min(maxima[a.exercise], max(0.0, before + a.points)))
                    row["effective"][id(a)] = round_points(parts[a.exercise] - before)
            score = shown_total(parts.values())
            created = export.created.get(name) if export else None
            when, source = gradebook.submitted_at(ready.submissions[name], created)
            deadline = ready.extensions.get(person.id)
            final, days, why = late.apply(score, when, deadline) if late else (score, 0.0, "")
            if deadline is not None and late is not None:
                why = (why + "; " if why else "") + f"extended deadline {deadline.isoformat(timespec='minutes')}"
            report["late"] = {"submitted_at": when.isoformat() if when else None, "source": source,
                              "days_late": round(days, 3), "penalty": why, "final_score": final}
            status = "error" if report.get("error") else ("late" if days > 0 else "graded")
            row.update(score=score, final=final, status=status, late=why, parts=parts, time_source=source,
                       submitted=when.isoformat(timespec="seconds") if when else "")
        extra = [a.points for a in row["adjustments"] if a.exercise == controls.TOTAL]
        if extra:
            row["adjusted"] = shown_total(extra)
            row["final"] = max(0.0, shown_total([row["final"], row["adjusted"]]))  # a grade is never negative
        rows.append(row)
    return rows


def exercise_columns(reports: dict[str, dict]) -> list[str]:
    ids = {e["id"] for r in reports.values() for e in r.get("exercises", [])}
    return [e for e in POINTS if e in ids] + sorted(ids - set(POINTS))


def _max_total(reports: dict[str, dict]) -> float:
    return max((float(r.get("max_score", 0)) for r in reports.values()), default=float(sum(POINTS.values())))


def grades_csv(rows: list[dict], reports: dict[str, dict], rename=None) -> str:
    """``grades.csv``: a row per learner, points per exercise, total (their sum), late penalty,
    adjustments, final, status, submission time and where it comes from (``time_source``:
    the export's metadata or the files' times); ``submitted_as``: the id the submission came
    with. ``rename``: the pseudonym of a learner id (``anonymous/``). A row's learner text
    (``shown``, ``shown_as``, ``error``: :class:`~autograder.inert.LearnerText`) is a cell each,
    escaped for a spreadsheet, within the learner's share of this file (:mod:`.budget`)."""
    columns = exercise_columns(reports)
    f = io.StringIO()
    w = csv.writer(f)
    w.writerow(["learner", "submitted_as", *columns, "total", "late_penalty", "adjustment", "final", "max_total",
                "status", "submitted_at", "time_source", "adjustments", "error"])
    for row in rows:
        budget = share("grades.csv")
        said = "; ".join(f"{a.exercise} {controls.signed(a.points)}: {a.reason}" for a in row["adjustments"])
        if rename is None:
            who = learner(row["shown"]).csv(budget, CELL)
            came = learner(row["shown_as"]).csv(budget, CELL)
        else:
            who, came = rename(row["id"]), rename(row["submitted_as"]) if row["submitted_as"] else ""
        w.writerow([who, came, *(points(row["parts"].get(c, 0.0)) for c in columns), points(row["score"]),
                    row["late"], points(row["adjusted"]), points(row["final"]), points(_max_total(reports)),
                    row["status"], row["submitted"], row.get("time_source", ""), spreadsheet(said),
                    learner(row["error"]).csv(budget)])
    return f.getvalue()


def write_class_files(out: Path, rows: list[dict], reports: dict[str, dict], assignment: str, seed: int) -> None:
    files.write_atomic(out / "grades.csv", grades_csv(rows, reports))
    canvas = [{"ids": r["canvas_ids"], "score": r["final"]} for r in rows if r["on_roster"]]
    files.write_atomic(out / "canvas.csv", gradebook.canvas_csv(canvas, assignment, _max_total(reports)))
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
        return gradebook.pseudonym(x, str(seed))

    reports = {r["id"]: r["report"] for r in rows if r["report"]}
    files.write_atomic(out / "anonymous" / "grades.csv", grades_csv(rows, reports, rename))
    files.write_atomic(out / "anonymous" / "summary.md", summary.to_markdown(stats, rename))
    if result.similarity is not None:
        files.write_atomic(out / "anonymous" / "similarity.md", sim.clusters_markdown(result.similarity, rename))


def file_name(learner: str) -> str:
    """A learner's feedback file's name: one rule with the reports' (``safe_name``)."""
    return safe_name(learner)
