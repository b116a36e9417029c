"""One source for every solution: each ``{solution}`` the book shows is graded as a learner's
submission and gets full marks on its exercise, so the book and the reference cannot drift.

The solution shown for exercise ``ex-X`` is the Python code of the ``{solution} ex-X`` block;
its exercise id is the one the ``{exercise}`` labelled ``ex-X`` names. The blocks are appended to
the modules of a copy of ``solutions/`` (``MODULE_OF``: the file a submission holds each
exercise in), so that their definitions replace the reference's, and the whole copy goes
through the grader, isolation included. The learner release replaces these blocks by a note
(``scripts/build_release.py``)."""
import ast
import json
import re
from pathlib import Path

import pytest

from autograder.classroom.release import unsolved
from autograder.spec import MODULE_OF
from solution_copies import edited_solutions

ROOT = Path(__file__).resolve().parent.parent

PYTHON_BLOCK = re.compile(r"^(`{3,})(?:python|ipython3?)\s*\n(.*?)^\1\s*$", re.M | re.S)
EXERCISE = re.compile(r"^(`{3,}|:{3,})\s*\{exercise\}.*?\n:label:\s*(\S+)(.*?)^\1\s*$", re.M | re.S)


def shown_solutions() -> dict[str, tuple[str, str]]:
    """exercise id -> (the chapter it is shown in, the Python code of its ``{solution}``)."""
    ids, shown, ungraded = {}, {}, set()
    for chapter in sorted((ROOT / "book").glob("*.ipynb")):
        text = "\n".join("".join(c["source"]) for c in json.loads(chapter.read_text())["cells"]
                         if c["cell_type"] == "markdown")
        for match in EXERCISE.finditer(text):
            if "**Ungraded**" in match.group(3):  # pen and paper, or a cell of the chapter: no id
                ungraded.add(match.group(2))
                continue
            names = re.findall(r"exercise\s+id\s+`(\w+)`", match.group(3))
            assert len(names) == 1, f"{chapter.name} {match.group(2)}: the exercise names {names}"
            ids[match.group(2)] = names[0]
        for label, block in unsolved.solution_blocks(text):
            if label in ungraded:
                continue
            assert label not in shown, f"{chapter.name}: a second solution of {label}"
            shown[label] = (chapter.name, "\n".join(m.group(2) for m in PYTHON_BLOCK.finditer(block)))
    # A solution must name an exercise of the book, and every exercise must show one.
    assert set(shown) == set(ids), (sorted(set(shown) ^ set(ids)))
    return {ids[label]: solution for label, solution in shown.items()}


def test_every_graded_exercise_shows_one_solution_that_defines_it():
    shown = shown_solutions()
    assert set(shown) == set(MODULE_OF)
    for exercise_id, (chapter, code) in shown.items():
        defined = {n.name for n in ast.parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert exercise_id in defined, f"{chapter}: the solution of {exercise_id} defines {sorted(defined)}"


def test_every_solution_shown_in_the_book_gets_full_marks(tmp_path):
    runner = pytest.importorskip("autograder.grading.runner")
    shown = shown_solutions()
    submission = edited_solutions(tmp_path)
    for exercise_id, (chapter, code) in sorted(shown.items()):
        module = submission / f"{MODULE_OF[exercise_id]}.py"
        module.write_text(f"{module.read_text()}\n\n# Shown in book/{chapter}\n{code}")
    report = runner.grade_submission(submission, exercises=sorted(shown))
    marks = {r.id: (r.status, r.score, r.max_score, r.feedback) for r in report.exercises}
    assert set(marks) == set(shown)
    wrong = {i: (m[0], m[1], m[3]) for i, m in marks.items() if (m[0], m[1]) != ("passed", m[2])}
    assert wrong == {}
