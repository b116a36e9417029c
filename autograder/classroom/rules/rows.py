"""A row per learner of the class: their submission's points after the gradebook's rules, in
the order the rules apply. The exercise points are rounded (:func:`autograder.scoring.round_points`),
an adjustment on an exercise is kept between 0 and its points, the total is their sum, the late
policy (:mod:`.late`, from the learner's own deadline where an extension gives one) applies to
that total, and the adjustments on the total come after; a grade is never negative.

Some rows give Canvas no grade (``withheld``: a blank cell, which an import leaves as it
was), and say why in their status: ``held`` (the submission's identity is ambiguous:
:mod:`..intake`), ``not yet due`` (the learner's deadline, or their extension, has not
passed), ``no trusted time`` (a deadline is given but nothing the instructor controls dates
the submission: lateness is neither charged nor granted). With ``points`` (the assignment's
points in Canvas) every final is also shown scaled to it, the raw points beside.
"""
from __future__ import annotations

from datetime import datetime, timezone

from ...inert import LearnerText
from ...scoring import points as shown_points
from ...scoring import round_points, shown_total
from ...spec import POINTS
from ..intake import controls, times


def class_rows(reports: dict[str, dict], ready, late, result, possible: float | None = None,
               now: datetime | None = None) -> list[dict]:
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
    rows, maximum = [], max_total(reports)
    now = now or datetime.now(timezone.utc)
    for person in ready.people:
        name = None if person.id in ready.held_people else by_person.get(person.id)
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
               "time_source": "", "withheld": "", "older": ready.older.get(name, []) if name else []}
        deadline = ready.extensions.get(person.id)
        due = deadline or (late.deadline if late else None)
        if person.id in ready.held_people:
            row.update(score=0.0, final=0.0, status="held", late="", submitted="",
                       withheld=ready.held_people[person.id],
                       error=LearnerText(ready.held_people[person.id], "why the submission is held"))
        elif report is None:
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
            when, source = times.submitted_at(ready.submissions[name], created, now)
            collected = None
            if late is not None and when is not None and source == times.FROM_FOLDER and when > (due or late.deadline):
                # A folder's change time is when the instructor put it there, which bounds the hand-in from
                # above only: it shows a submission on time, never late (a class folder unzipped after the
                # deadline would make every learner late). A file keeps its time as downloaded.
                collected, when = when, None
            final, days, why = late.apply(score, when, deadline) if late else (score, 0.0, "")
            if late is not None and when is None:
                why = ("no trusted submission time (the export gives none, and nothing the instructor controls "
                       "dates it): lateness not applied, and canvas.csv leaves the cell blank until you decide")
                if collected is not None:
                    why = (f"collected after the deadline ({source} {collected.isoformat(timespec='seconds')}), "
                           "which says nothing of when it was handed in: lateness not applied, and canvas.csv "
                           "leaves the cell blank until you decide (Gradescope's export dates each submission)")
                row["withheld"] = "no trusted submission time"
            if deadline is not None and late is not None:
                why = (why + "; " if why else "") + f"extended deadline {deadline.isoformat(timespec='minutes')}"
            report["late"] = {"submitted_at": when.isoformat() if when else None, "source": source,
                              "days_late": round(days, 3), "penalty": why, "final_score": final}
            status = "error" if report.get("error") else ("late" if days > 0 else "graded")
            if row["withheld"]:
                status = "no trusted time"
            row.update(score=score, final=final, status=status, late=why, parts=parts, time_source=source,
                       submitted=when.isoformat(timespec="seconds") if when else "")
        extra = [a.points for a in row["adjustments"] if a.exercise == controls.TOTAL]
        if extra:
            row["adjusted"] = shown_total(extra)
            row["final"] = max(0.0, shown_total([row["final"], row["adjusted"]]))  # a grade is never negative
        if due is not None and due > now and row["status"] != "held":
            row.update(status="not yet due", withheld=f"due {due.isoformat(timespec='minutes')}")
        row["possible"] = possible
        row["scaled"] = scaled(row["final"], row["max_total"], possible)
        rows.append(row)
    return rows


def scaled(final: float, maximum: float, possible: float | None) -> float:
    """A final as Canvas gets it: as graded, or scaled to the assignment's ``possible`` points
    (rounded as every shown score)."""
    if possible is None:
        return final
    return round_points(final * possible / maximum) if maximum else 0.0


def both(row: dict) -> str:
    """A row's final as a person reads it: ``11.11/20 (10/18 points graded)`` when scaled."""
    if row.get("possible") is None:
        return f"{shown_points(row['final'])}/{shown_points(row['max_total'])}"
    return (f"{shown_points(row['scaled'])}/{shown_points(row['possible'])} ({shown_points(row['final'])}/"
            f"{shown_points(row['max_total'])} points graded)")


def max_total(reports: dict[str, dict]) -> float:
    """The points a submission can get: its report's, else every exercise's."""
    return max((float(r.get("max_score", 0)) for r in reports.values()), default=float(sum(POINTS.values())))
