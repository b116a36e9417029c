"""The class files a batch writes besides the reports: ``grades.csv`` (a row per learner of the
roster), the gradebook and feedback files, and the anonymised copies to share.
"""
from __future__ import annotations

from pathlib import Path

from ..spec import POINTS
from . import files, gradebook


def class_rows(reports: dict[str, dict], submissions: dict[str, Path], roster, late, warn,
               result, export=None) -> list[dict]:
    """One row per learner: the roster's (in its order) or the submitters', with late penalties.
    A submission is its submitters' (a Gradescope export's group has several, who share its
    report), or else the learner's it is named for."""
    submitters = export.submitters if export else {}
    claims = [(name, who) for name in sorted(reports)
              for who in submitters.get(name) or [gradebook.Learner(name, {}, (name,))]]
    if roster is None:
        people = sorted((who for _, who in claims), key=lambda who: who.id)
        owner = {who.id: who.id for _, who in claims}
    else:
        owner, strangers = gradebook.match_roster(roster, [who for _, who in claims])
        if strangers:
            warn(f"not on the roster, graded but left out of canvas.csv: {', '.join(strangers)}")
        people = list(roster) + [who for _, who in claims if who.id in strangers]
        for s in strangers:
            owner[s] = s
    by_person = {}  # person -> the submission of theirs
    for name, who in claims:
        by_person[owner[who.id]] = name
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
            created = export.created.get(name) if export else None
            when, source = gradebook.submitted_at(submissions[name], created)
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
        w.writerow([rename(row["id"]), *(gradebook.points(scores.get(c, 0.0)) for c in columns), gradebook.points(row["score"]),
                    row["late"], gradebook.points(row["final"]), gradebook.points(max_total), row["status"],
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
        md, html = (out / "feedback" / f"{_file_name(row['id'])}{suffix}" for suffix in (".md", ".html"))
        if html.exists() and _holds(md, text):
            continue  # unchanged since the last run: its page is too (rendering all is most of a rerun)
        # The page first: a run stopped between the two leaves an .md that differs, redone next time.
        files.write_atomic(html, feedback.to_html(text, f"{assignment}: feedback for {row['id']}"))
        files.write_atomic(md, text)


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def write_anonymous(out: Path, rows: list[dict], result, seed: int) -> None:
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
