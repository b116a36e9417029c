"""A learner's file that does not import is said so, with its type and line, wherever it counts.

From outside: a copy of the reference solutions as the learner's package, one module
(masking.py) raising when imported. ``check()`` in a separate interpreter (as a notebook runs
it) marks every exercise whose module imports masking.py ✘ "not graded: your file masking.py
does not import: ValueError at line N" (the notebook cannot import it, whatever the grader's
stand-ins scored), and so masking.py's own; ``mha-grade`` says it for each of masking.py's
exercises and notes the stand-ins on the others; an exercise of an unrelated module passes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from solution_copies import edited_solutions

from autograder.said import plain  # the learner's words in their slots, read as text
from autograder.isolation import exchange

ROOT = Path(__file__).resolve().parents[1]
HEAD = "import numpy as np\n"
RAISING = {  # what masking.py does at its top, after its imports -> the type the learner is told
    "value_error": ("raise ValueError('boom')\n", "ValueError"),
    "missing_module": ("import scipy.nonexistent_submodule\n", "ModuleNotFoundError"),
    "name_error": ("undefined_name + 1\n", "NameError"),
}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text.strip() in line)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_check_in_a_notebook_says_which_file_does_not_import(tmp_path):
    """check() as a learner's kernel runs it: a package folder made of the solutions."""
    package = tmp_path / "mha_exercises"
    shutil.copytree(ROOT / "mha_exercises", package, ignore=shutil.ignore_patterns("__pycache__"))
    for module in ROOT.glob("solutions/*.py"):
        if module.name != "__init__.py":
            shutil.copy(module, package / module.name)
    masking = package / "masking.py"
    masking.write_text(masking.read_text().replace(HEAD, HEAD + RAISING["value_error"][0], 1))
    line = _line_of(masking, "raise ValueError('boom')")
    code = ("from mha_exercises.check import check\n"
            "for name in ('scaled_dot_product_attention', 'causal_mask', 'split_heads'):\n"
            "    check(name)\n    print('=' * 10)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_BACKEND", "PYTHONPATH")}
    env.update(PYTHONPATH=str(tmp_path), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    attention, own, heads, _ = (_flat(part) for part in done.stdout.split("=" * 10))
    said = f"not graded: your file masking.py does not import: ValueError at line {line}: boom"
    assert attention.startswith(f"✘ scaled_dot_product_attention: {said}"), attention
    assert "attention.py imports masking.py" in attention and "Fix masking.py" in attention
    assert "✔" not in attention
    assert own.startswith(f"✘ causal_mask: {said}"), own
    assert heads.startswith("✔ split_heads: 4/4 points, passed"), heads
    assert "masking" not in heads


def test_mha_grade_says_it_for_every_exercise_of_the_module(tmp_path):
    submission = edited_solutions(tmp_path, "masking", HEAD, HEAD + RAISING["value_error"][0])
    line = _line_of(submission / "masking.py", "raise ValueError('boom')")
    out = tmp_path / "report.json"
    ids = ["padding_mask", "causal_mask", "masked_softmax", "scaled_dot_product_attention", "split_heads"]
    done = subprocess.run([sys.executable, "-m", "autograder", str(submission), "--json", str(out),
                           *[a for i in ids for a in ("-e", i)]],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1", COLUMNS="200"))
    assert done.returncode in (0, 1), done.stderr
    results = {r["id"]: r for r in json.loads(out.read_text())["exercises"]}
    for exercise_id in ("padding_mask", "causal_mask", "masked_softmax"):
        result = results[exercise_id]
        assert (result["status"], result["score"]) == ("error", 0), result
        assert result["not_imported"]["masking"].startswith(f"ValueError at line {line}: boom")
        for case in result["cases"]:  # one failure, in the notes' words: its line's code too
            assert plain(case["feedback"]) == ("not graded: your file masking.py does not import: "
                                        + result["not_imported"]["masking"]), case
            assert "(`raise ValueError('boom')`)" in case["feedback"]
    # Graded with stand-ins (one mistake counts once), and told so.
    attention = results["scaled_dot_product_attention"]
    assert attention["status"] == "passed"
    # The note is the grader's words alone (the child's record is the learner's: issue 31), and
    # points to where the learner's words are: masking.py's own exercises, above.
    assert any(n.startswith("your file masking.py does not import (it raised an exception while it was imported")
               and "stand-ins" in n and "boom" not in n for n in attention["notes"]), attention["notes"]
    heads = results["split_heads"]
    assert heads["status"] == "passed" and heads["not_imported"] == {} and not any("masking" in n for n in heads["notes"])
    printed = _flat(done.stdout)
    assert f"your file masking.py does not import: ValueError at line {line}" in printed, done.stdout


@pytest.mark.parametrize("kind", ["missing_module", "name_error"])
def test_each_kind_of_import_time_failure_is_named(tmp_path, kind):
    from autograder.grading import runner

    top, type_name = RAISING[kind]
    submission = edited_solutions(tmp_path, "masking", HEAD, HEAD + top)
    line = _line_of(submission / "masking.py", top)
    report = runner.grade_submission(submission, exercises=["causal_mask", "softmax"], parallel=1)
    results = {r.id: r for r in report.exercises}
    causal, softmax = results["causal_mask"], results["softmax"]
    assert plain(causal.cases[0].feedback).startswith(f"not graded: your file masking.py does not import: {type_name}")
    assert f"line {line}" in causal.cases[0].feedback
    assert softmax.status == "passed"  # attention.py imports masking.py: stand-ins...
    assert softmax.not_imported["masking"].startswith(f"{type_name} at line {line}")  # ...and the record says so


def test_the_childs_record_is_checked_as_the_learners():
    """The record comes from the learner's process: only its known modules and plain parts,
    cut and inert; anything else is left out."""
    record = {
        "masking": {"type": "ValueError\x1b[2J", "line": 3, "code": "raise X\u202e", "text": "b" * 5000},
        "../etc/passwd": {"type": "ValueError", "line": 1},  # not a module of the course
        "heads": "NameError at line 1",  # not parts
        "layer": {"type": 7, "line": 2},  # no type name
        "attention": {"type": "KeyError", "line": -4, "code": ["x"], "text": None},
    }
    said = exchange.not_imported(record)
    assert set(said) == {"masking", "attention"}
    assert "\x1b" not in said["masking"] and "\u202e" not in said["masking"]
    assert said["masking"].startswith("ValueError")
    assert " at line 3: " in said["masking"] and len(said["masking"]) < 500
    assert said["attention"] == "KeyError"  # no line, no code, no text: none is made up
    assert exchange.not_imported(["masking"]) == {} and exchange.not_imported(None) == {}
    notes = exchange.stand_in_notes(said, "attention")
    assert len(notes) == 1 and notes[0].startswith("your file masking.py does not import (")
    assert "ValueError" not in notes[0] and "b" * 20 not in notes[0]  # none of the child's words in a note
    # A file Python's parser refuses is said in the parser's words, read by the grader itself.
    broken = {"masking": "def oops(:\n"}
    assert exchange.stand_in_notes(said, "attention", broken)[0].startswith(
        "your file masking.py does not import (SyntaxError at line 1)")
    assert exchange.not_imported_in(said, broken) == {"masking": "SyntaxError at line 1: invalid syntax (`def oops(:`)"}
    assert exchange.not_imported_in(said, {}) == {}  # a file not handed in: no record of it


def test_a_hostile_exception_at_import_still_names_its_type_and_line():
    from autograder.isolation.package import _compiled, import_failure

    source = "class Evil(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\nraise Evil()\n"
    try:  # compiled as the learner's process compiles a module (its lines kept for the traceback)
        exec(_compiled("hostile_module", source), {})
    except Exception as err:  # noqa: BLE001
        record = import_failure("hostile_module", err)
    assert record["type"] == "Evil" and record["line"] == 5 and record["code"] == "raise Evil()"
    assert exchange.not_imported({"masking": record})["masking"] == "Evil at line 5 (`raise Evil()`)"
    assert exchange.not_imported({"masking": {**record, "text": "x" * 10_000}})["masking"].count("x") == 300
