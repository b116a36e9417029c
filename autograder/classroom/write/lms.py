"""What an LMS imports. Canvas's gradebook import layout (``canvas.csv``): the identifying
columns (``Student, ID, SIS User ID, SIS Login ID, Section``), one column named for the
assignment, and a ``Points Possible`` row under the header; Canvas creates the assignment on
import when no column of that name exists yet. And the pseudonyms of ``--anonymize``.
"""
from __future__ import annotations

import csv
import hashlib
import io

from ...inert import learner
from ...scoring import points
from ..budget import CELL, share
from ..intake.roster import CANVAS_ID_COLUMNS


def canvas_csv(rows: list[dict], assignment: str, maximum: float) -> str:
    """Canvas's import layout; ``rows``: ``{"ids": {column: LearnerText}, "score": float | None}``
    (the identifying columns: a Gradescope ``:name:`` or sid is the learner's to write, so each
    cell is escaped for a spreadsheet, within the learner's share of this file), the scores as
    every class file shows them (:func:`points`)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow([*CANVAS_ID_COLUMNS, assignment])
    w.writerow(["Points Possible", "", "", "", "", points(maximum)])
    for row in rows:
        budget = share("canvas.csv")
        ids = row["ids"]
        score = row["score"]
        w.writerow([*(learner(ids[c]).csv(budget, CELL) if c in ids else "" for c in CANVAS_ID_COLUMNS),
                    "" if score is None else points(score)])
    return out.getvalue()


def pseudonym(learner: str, salt: str) -> str:
    """A stable, unguessable stand-in for a learner id (``--anonymize``)."""
    return "learner-" + hashlib.sha256(f"{salt}\0{learner}".encode()).hexdigest()[:8]
