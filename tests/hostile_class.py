"""Classes built to break the class files, not to score: every channel a learner controls in a
batch (file and folder names, folder depth, zips, SIDs and names in a Gradescope export, their
own ``submission_metadata.json``, the type, message and notes of their code's errors), and a
stand-in grader that reads each submission as the real one does (``submission.load``) and scores
it through the real scoring (``scoring.score``): an honest submission (``# honest``) gets full
marks; a hostile one raises, in each case, the exception its ``HOSTILE = {...}`` line describes.
Shared by ``tests/test_hostile_class.py`` (the attacks one by one, and generated ones).
"""
from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

from autograder.scoring import score
from autograder.spec import POINTS, Case, CaseError

EXERCISES = ("softmax", "scaled_dot_product_attention")
HONEST = "import numpy as np\n# honest\n"


def hostile_code(kind: str = "exception", type_name: str = "ValueError", message: str = "", notes=()) -> str:
    """Learner code whose every case fails with this error (read by :func:`stand_in_grade`)."""
    spec = {"kind": kind, "type": type_name, "message": message, "notes": list(notes)}
    return f"import numpy as np\nHOSTILE = {spec!r}\n"


def stand_in_grade(path, exercises=None, seed=0) -> dict:
    from autograder.submission import load

    sub = load(path)
    code = "\n".join(sub.sources.values())
    found = re.search(r"^HOSTILE = (.*)$", code, re.M)
    spec = ast.literal_eval(found.group(1)) if found else None
    exs = []
    for e in exercises or EXERCISES:
        cases = [Case(f"case {i}", "call", {}) for i in range(3)]
        if spec is None:  # honest: every case passes (anything else: none does)
            ok = "# honest" in code
            exs.append({"id": e, "status": "passed" if ok else "failed", "score": float(POINTS[e]) * ok,
                        "max_score": float(POINTS[e]), "feedback": "", "notes": [],
                        "cases": [{"name": c.name, "passed": ok, "score": float(POINTS[e]) / 3 * ok,
                                   "max_score": float(POINTS[e]) / 3, "feedback": "", "diagnosis": None}
                                  for c in cases]})
            continue
        else:
            error = f"{spec['type']}: {spec['message']} (attention.py, line 3)" if spec["kind"] == "exception" \
                else spec["message"]
            outputs, expected = [CaseError(spec["kind"], error)] * 3, [None] * 3
        result = score(e, POINTS[e], cases, outputs, expected, lambda *a: {}, notes=(spec or {}).get("notes", ()))
        exs.append(dataclasses.asdict(result))
    return {"submission": str(path), "score": sum(x["score"] for x in exs),
            "max_score": float(sum(POINTS[e] for e in exercises or EXERCISES)), "exercises": exs, "seed": seed,
            "intake": {"taken": list(sub.taken), "ignored": list(sub.ignored)}}


def export(download: Path, entries: list[dict], assignment: int = 8046601) -> Path:
    """A Gradescope export: ``entries`` of ``{"folder", "people": [(name, sid, email)],
    "created": "2026-03-01 22:58:05.000000000 Z", "files": {path: text or bytes}}``; the
    metadata's strings double-quoted with every control escaped, as a YAML writer does."""
    top = Path(download) / f"assignment_{assignment}_export"
    lines = ["---"]
    for e in entries:
        (top / e["folder"]).mkdir(parents=True, exist_ok=True)
        for rel, data in e.get("files", {}).items():
            target = top / e["folder"] / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data if isinstance(data, bytes) else data.encode())
        lines += [f"{e['folder']}:", "  :submitters:"]
        for name, sid, email in e["people"]:
            lines += [f"  - :name: {json.dumps(name)}", f"    :sid: {json.dumps(sid)}", f"    :email: {json.dumps(email)}"]
        lines += [f"  :created_at: {e.get('created', '2026-03-01 22:58:05.000000000 Z')}", "  :score: 0.0"]
    (top / "submission_metadata.yml").write_text("\n".join(lines) + "\n")
    return Path(download)
