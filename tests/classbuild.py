"""Building classes as instructors receive them, for the gradebook's tests and for
``bench/gradebook_class.py``: Gradescope's "Export Submissions" (unzipped: one top folder,
``submission_<id>/`` folders, ``submission_metadata.yml`` with Ruby-symbol keys) and a Canvas
gradebook export as the roster (with its "Points Possible" row and its test student).

Also a stand-in grader (:func:`planted_grade`) that reads a submission as the real one does
(``submission.load``: misnamed files, zips, nested folders) and scores each exercise as a
comment in the learner's code plants it (``# planted softmax 3.3333``): instant, and the
expected numbers are known exactly.
"""
from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograder.spec import POINTS

EXERCISES = ("softmax", "scaled_dot_product_attention", "split_heads")  # attention.py and heads.py


@dataclass
class Person:
    name: str  # "Lovelace, Ada"
    canvas_id: str  # Canvas's ID
    sis_user: str  # SIS User ID: Gradescope's sid
    login: str  # SIS Login ID: the roster's id in the class files
    email: str
    section: str = "A"


@dataclass
class Entry:
    """One submission of the export."""
    folder: str  # submission_<id>
    people: list[Person]
    created: datetime
    files: dict[str, str] = field(default_factory=dict)  # path inside the folder -> text


def planted(scores: dict[str, float]) -> str:
    """Learner code whose exercises :func:`planted_grade` scores as given."""
    return "import numpy as np\n" + "".join(f"# planted {e} {s!r}\n" for e, s in scores.items())


def planted_grade(path, exercises=None, seed=0) -> dict:
    from autograder.submission import load

    sub = load(path)
    code = "\n".join(sub.sources.values())
    scores = {e: float(s) for e, s in re.findall(r"# planted (\w+) ([-\d.e]+)", code)}
    exs = []
    for e in exercises or EXERCISES:
        s = min(scores.get(e, 0.0), POINTS[e])
        status = "passed" if s >= POINTS[e] else ("partial" if s > 0 else "failed")
        diagnosis = ("your output matches softmax without subtracting the max first (exp overflows to inf, then "
                     "inf/inf = NaN, at logits of 1e4)") \
            if e == "softmax" and 0 < s < POINTS[e] else None
        exs.append({"id": e, "status": status, "score": s, "max_score": float(POINTS[e]), "feedback": "",
                    "notes": [], "cases": [{"name": "float32", "passed": s >= POINTS[e], "diagnosis": diagnosis,
                                            "score": 0.0, "max_score": 1.0, "feedback": ""}]})
    return {"submission": str(path), "score": sum(e["score"] for e in exs),
            "max_score": float(sum(POINTS[e] for e in exercises or EXERCISES)), "exercises": exs, "seed": seed,
            "intake": {"taken": list(sub.taken), "ignored": list(sub.ignored)}, "grader_pid": os.getpid()}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def write_export(download: Path, entries: list[Entry], assignment: int = 8046601) -> Path:
    """The export as unzipping Gradescope's zip gives it, in ``download``; returns ``download``."""
    top = Path(download) / f"assignment_{assignment}_export"
    lines = ["---"]
    for e in entries:
        for rel, text in e.files.items():
            (top / e.folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (top / e.folder / rel).write_text(text)
        (top / e.folder).mkdir(parents=True, exist_ok=True)
        lines += [f"{e.folder}:", "  :submitters:"]
        for p in e.people:
            lines += [f"  - :name: {_quote(p.name)}", f"    :sid: {_quote(p.sis_user)}", f"    :email: {p.email}"]
        zone = e.created.strftime("%z")
        zone = "Z" if zone in ("+0000", "") else f"{zone[:3]}:{zone[3:]}"  # as Gradescope writes it
        lines += [f"  :created_at: {e.created.strftime('%Y-%m-%d %H:%M:%S.%f')}000 {zone}", "  :score: 0.0",
                  "  :history: []"]
    (top / "submission_metadata.yml").write_text("\n".join(lines) + "\n")
    (Path(download) / "__MACOSX").mkdir(exist_ok=True)
    return Path(download)


def canvas_roster(people: list[Person]) -> str:
    """A Canvas gradebook export: its header, "Points Possible" row, the test student."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 1 (1234)"])
    w.writerow(["    Points Possible", "", "", "", "", "100"])
    for p in people:
        w.writerow([p.name, p.canvas_id, p.sis_user, p.login, p.section, ""])
    w.writerow(["Student, Test", "999", "", "test_student", "A", ""])
    return out.getvalue()
