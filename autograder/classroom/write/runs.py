"""What a batch's output folder remembers of its last run, so that a run never replaces a
class's files with ones that lost information without saying so.

* ``class.json``: how many learners this run graded (had a submission), of how many, which
  the next run reads before it grades (:mod:`..intake.previous`).
* Files of learners this run does not have (feedback and reports of an earlier roster, or of
  submissions no longer in the class folder) are moved to ``stale/``, never left beside the
  current ones to be handed out, and the run says how many and where.
* ``history.csv``: the first run's final scores, then every final score a run changed, every
  learner added and every one removed, with when, before, after and why (a new submission,
  a regrade, an extension or the late policy, an adjustment, a roster change): what the
  gradebook in Canvas may still hold from an earlier import.
"""
from __future__ import annotations

import csv
import io
import os
from datetime import datetime, timezone
from pathlib import Path

from ...inert import learner, spreadsheet
from ...scoring import points
from .. import files
from ..budget import CELL, share
from ...scoring import round_points
from .classfiles import canvas_cell, file_name
from ..intake.controls import signed
from ..intake.previous import RECORD, graded_learners

STALE = "stale"
HISTORY = "history.csv"


def record(out: Path, ready) -> None:
    files.write_json(Path(out) / RECORD, {"graded_learners": graded_learners(ready), "learners": len(ready.people),
                                          "submissions": len(ready.submissions)})


def move_stale(out: Path, rows: list[dict], submissions: dict, warn) -> list[str]:
    """Move the feedback and reports of learners not in this run to ``stale/``; say so."""
    out = Path(out)
    keep = {"feedback": {file_name(r["id"]) + ext for r in rows for ext in (".md", ".html")},
            "reports": {f"{name}.json" for name in submissions}}
    moved = []
    for folder, names in keep.items():
        try:
            present = sorted(os.listdir(out / folder))
        except OSError:
            continue
        for name in present:
            if name.startswith(".") or name in names or not (out / folder / name).is_file():
                continue
            target = out / STALE / folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(out / folder / name, target)
            moved.append(f"{folder}/{name}")
    if moved:
        shown = ", ".join(moved[:4]) + (f" and {len(moved) - 4} more" if len(moved) > 4 else "")
        warn(f"{len(moved)} file(s) of learners not in this run moved to {out / STALE}: {shown}")
    return moved


HEADER = ["when", "learner", "final_before", "final_after", "status", "reason"]


def log_changes(out: Path, rows: list[dict], warn) -> int:
    """Append to ``history.csv`` what this run does to the final scores OUT's ``grades.csv``
    holds (call before it is replaced): on the first run every learner's final ("first run");
    later, each learner added, removed, or whose final changed, with why (:func:`_reasons`).
    Says how many changed after the first run."""
    out = Path(out)
    try:
        with open(out / "grades.csv", newline="", encoding="utf-8") as f:
            before = {row["learner"]: row for row in csv.DictReader(f)}
        first = False
    except FileNotFoundError:
        before, first = {}, True
    except (OSError, UnicodeDecodeError, csv.Error, KeyError):
        return 0
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # a learner as grades.csv's first cell shows them (learner text, escaped for a spreadsheet)
    cells = [(r, learner(r["shown"]).csv(share("history.csv"), CELL)) for r in rows]
    now = {cell for _, cell in cells}
    changed = []
    for r, cell in cells:
        old = before.get(cell)
        replaces = ("; replaces " + ", ".join(f"{f} ({t.isoformat(timespec='seconds')})" for f, t in r["older"])
                    if r.get("older") else "")
        if first:
            changed.append((cell, "", _final(r), r["status"], "first run" + replaces))
        elif old is None:
            changed.append((cell, "", _final(r), r["status"], "added (roster change or a new submitter)" + replaces))
        elif _old_final(old) != _final(r) or old.get("status") != r["status"]:
            changed.append((cell, _old_final(old), _final(r), r["status"], _reasons(old, r) + replaces))
    for cell, old in before.items():  # as the last grades.csv wrote them: escaped already
        if cell not in now:
            changed.append((cell, _old_final(old), "", "removed",
                            "removed (roster change, or their submission is gone)"))
    if not changed:
        return 0
    _append(out / HISTORY, [[when, *c] for c in changed])
    if not first:
        warn(f"{len(changed)} final score(s) changed since the last run (listed in {out / HISTORY}): "
             + ", ".join(f"{x} {o or '-'} -> {n or '-'} ({why.split(' (')[0]})" for x, o, n, _, why in changed[:5])
             + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""))
    return 0 if first else len(changed)


def _final(row: dict) -> str:
    """A row's final as Canvas gets it (blank when it gives none yet), the raw points beside
    when the assignment's points scale it: ``11.11 (10/18 raw)``."""
    canvas = canvas_cell(row)
    if row.get("possible") is None or not canvas or round_points(row["possible"]) == round_points(row["max_total"]):
        return canvas
    return f"{canvas} ({points(row['final'])}/{points(row['max_total'])} raw)"


def _old_final(old: dict) -> str:
    """:func:`_final` of a row of the last ``grades.csv`` (one written before its ``canvas``
    column: its final)."""
    if "canvas" not in old:
        return old.get("final", "")
    if not old["canvas"] or old.get("points_possible") == old.get("max_total"):
        return old["canvas"]
    return f"{old['canvas']} ({old.get('final', '')}/{old.get('max_total', '')} raw)"


def _reasons(old: dict, row: dict) -> str:
    """Why a learner's final changed, from their row in the last ``grades.csv`` and now: the
    graded total (a regrade: a new submission, the grader or the options), the late penalty
    (an extension, or the late policy), the adjustments."""
    why = []
    said = "; ".join(f"{a.exercise} {signed(a.points)}: {a.reason}" for a in row["adjustments"])
    adjusted = old.get("adjustments", "") != spreadsheet(said)  # an exercise's adjustment moves the total too
    if old.get("submitted_at", "") != row["submitted"]:
        why.append("new submission")
    elif old.get("total") != points(row["score"]) and not adjusted:
        why.append("regrade")
    if old.get("late_penalty", "") != row["late"]:
        why.append("extension" if "extended deadline" in old.get("late_penalty", "") + row["late"] else "late policy")
    if adjusted:
        why.append("adjustment")
    if old.get("status") != row["status"] and row["status"] in ("not yet due", "held", "no trusted time") \
            or old.get("status") in ("not yet due", "held", "no trusted time"):
        why.append(f"status: {old.get('status', '')} -> {row['status']}")
    return ", ".join(why) or "regrade"


def _append(path: Path, lines: list[list[str]]) -> None:
    """Rows added at the end, synced; a history written before its ``reason`` column gets it
    (empty) first, rewritten whole and atomically."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            old = list(csv.reader(f))
    except FileNotFoundError:
        old = None
    except (OSError, UnicodeDecodeError, csv.Error):
        old = []
    text = io.StringIO()
    w = csv.writer(text)
    if old is not None and old[:1] != [HEADER]:
        w.writerow(HEADER)
        w.writerows(r + [""] * (len(HEADER) - len(r)) for r in old[1:])
        files.write_atomic(path, text.getvalue())
        text = io.StringIO()
        w = csv.writer(text)
    elif old is None:
        w.writerow(HEADER)
    w.writerows(lines)
    with open(path, "a", encoding="utf-8", newline="") as f:
        f.write(text.getvalue())
        f.flush()
        os.fsync(f.fileno())
