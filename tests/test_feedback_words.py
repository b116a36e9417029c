"""Sentences the grader prints stay true of the case and readable where they are shown.

A narrow terminal must not break words in the middle (`make grade` at 80 columns), a row that
was not attempted carries no note about how its attempt was graded, a diagnosis names no
magnitude its case does not have, and `check()` says when it lists fewer cases than the count
it just gave.
"""
from __future__ import annotations

import re
import shutil

import pytest
from rich.console import Console

from autograder import report
from autograder.grading import runner
from autograder.isolation import sandbox
from autograder.spec import CaseResult, ExerciseResult
from mha_exercises.check import verdict

from test_grader_pipeline import SOLUTIONS, STUBS

LONG = ("Your file mha_exercises/attention.py still raises NotImplementedError in "
        "scaled_dot_product_attention: see masked_softmax(scores, mask) and np.swapaxes(k, -1, -2).")


def _report(status="partial"):
    cases = [CaseResult(f"case {i}", 0.0, 1.0, False, LONG, diagnosis=None) for i in range(3)]
    result = ExerciseResult("scaled_dot_product_attention", status, 0.0, 8.0, cases, LONG,
                            notes=["graded with the reference softmax and masked_softmax"])
    return report.Report([result], 0.0, 8.0, 0, "test", "submission", "0" * 64, confinement={})


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_narrow_terminal_breaks_no_word(width):
    console = Console(width=width, record=True, color_system=None)
    report.print_table(_report(), console)
    lines = console.export_text().splitlines()
    words = set(" ".join(lines).split())
    broken = [w for w in LONG.split() if w not in words]
    assert not broken, f"at {width} columns these words were cut: {broken}\n" + "\n".join(lines)
    assert all(len(line.rstrip()) <= width for line in lines), "\n".join(lines)


def test_a_wide_terminal_keeps_the_table():
    console = Console(width=250, record=True, color_system=None)
    report.print_table(_report(), console)
    text = console.export_text()
    assert "┃ exercise" in text and LONG.split()[3] in text


def test_check_says_which_cases_are_examples():
    result = {"id": "softmax", "status": "partial", "score": 3.33, "max_score": 5.0, "notes": [],
              "feedback": "Your output matches softmax without subtracting the max first "
                          "(in 3 of 3 failing cases).",
              "cases": [{"name": f"logits {i}", "passed": False, "diagnosis": "same",
                         "feedback": "Your output matches softmax without subtracting the max first"}
                        for i in range(3)] + [{"name": "fine", "passed": True, "diagnosis": None,
                                                "feedback": ""}]}
    text = verdict({"exercises": [result]})
    listed = text.count("• ")
    assert listed == 1 and "one of the 3 failing checks, for example" in text, text


@pytest.fixture(scope="module")
def zygote():
    z = sandbox.Zygote()
    yield z
    z.close()


def test_a_row_not_attempted_carries_no_grading_note(zygote, tmp_path):
    """The layer's stub raises: nothing of the learner's ran, so no reference "stood in" for it."""
    sub = tmp_path / "sub"
    sub.mkdir()
    for f in SOLUTIONS.glob("*.py"):
        shutil.copy(f, sub / f.name)
    shutil.copy(STUBS / "layer.py", sub / "layer.py")
    rep = {r.id: r for r in runner.grade_submission(sub, zygote=zygote, exercises=["multi_head_attention"]).exercises}
    mha = rep["multi_head_attention"]
    assert mha.status == "not attempted", mha.feedback
    assert not any("graded with the reference" in n for n in mha.notes), mha.notes


def test_a_diagnosis_names_only_magnitudes_its_case_has(zygote, tmp_path):
    """The softmax without max subtraction fails at ±100 (float32) and ±1e4 (float64): whatever
    number a diagnosis quotes must be in the name of the case it is attached to."""
    sub = tmp_path / "sub"
    sub.mkdir()
    for f in SOLUTIONS.glob("*.py"):
        shutil.copy(f, sub / f.name)
    with open(sub / "attention.py", "a") as f:
        f.write("\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis, keepdims=True)\n")
    (softmax,) = runner.grade_submission(sub, zygote=zygote, exercises=["softmax"]).exercises
    diagnosed = [c for c in softmax.cases if c.diagnosis]
    assert {c.name for c in diagnosed} >= {"logits of ±100, float32", "logits of ±1e4, float64"}
    for c in diagnosed:
        for number in re.findall(r"\d+e\d+|±\d+(?:e\d+)?", c.diagnosis):
            assert number.lstrip("±") in c.name, f"{c.name!r} is told {c.diagnosis!r}"
