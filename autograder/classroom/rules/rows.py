"""A row per learner of the class: their submission's points after the gradebook's rules, in
the order the rules apply. The exercise points are rounded (:func:`autograder.scoring.round_points`),
an adjustment on an exercise is kept between 0 and its points, the total is their sum, the late
policy (:mod:`.late`, from the learner's own deadline where an extension gives one) applies to
that total, and the adjustments on the total come after; a grade is never negative.
"""
from __future__ import annotations

from ...inert import LearnerText
from ...scoring import round_points, shown_total
from ...spec import POINTS
from ..intake import controls, times


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
    rows, maximum = [], max_total(reports)
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
            when, source = times.submitted_at(ready.submissions[name], created)
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


def max_total(reports: dict[str, dict]) -> float:
    """The points a submission can get: its report's, else every exercise's."""
    return max((float(r.get("max_score", 0)) for r in reports.values()), default=float(sum(POINTS.values())))
