"""The grading pipeline end to end: submissions in, reports out.

Most tests grade in this process through ``runner.grade_submission`` with one learner-side
zygote shared by the module (starting one costs a torch import); a few run the real
``mha-grade`` console script to check what a user sees: exit codes, files, the table.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import report
from autograder.classroom.write import gradescope
from autograder.grading import runner
from autograder.isolation import sandbox
from autograder.grading.exercises import EXERCISES
from autograder.spec import MODULE_OF, STATUSES

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUBS = ROOT / "mha_exercises"
MHA_GRADE = [sys.executable, "-m", "autograder"]


@pytest.fixture(scope="module")
def zygote():
    z = sandbox.Zygote()
    yield z
    z.close()


def grade(path, zygote, **kw):
    return runner.grade_submission(path, zygote=zygote, **kw)


def by_id(rep):
    return {r.id: r for r in rep.exercises}


def copy_solutions(tmp_path: Path, name="submission") -> Path:
    dest = tmp_path / name
    dest.mkdir()
    for f in SOLUTIONS.glob("*.py"):
        if f.name != "__init__.py":
            shutil.copy(f, dest / f.name)
    return dest


def run_cli(*args, cwd=ROOT):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([*MHA_GRADE, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


# ----------------------------------------------------------------------- full and empty

def test_solutions_get_full_marks_on_every_exercise(zygote):
    rep = grade(SOLUTIONS, zygote)
    assert [r.id for r in rep.exercises] == list(EXERCISES)
    for r in rep.exercises:
        assert (r.status, r.score) == ("passed", r.max_score), (r.id, report.feedback(r))
    assert rep.score == rep.max_score == sum(e.points for e in EXERCISES.values())
    # On Gradescope: one test per exercise, worth its whole points, the tests adding up to 100.
    gs = gradescope.results(rep.to_dict())
    assert [(t["name"], t["score"], t["max_score"]) for t in gs["tests"]] == [
        (e.id, float(e.points), float(e.points)) for e in EXERCISES.values()]
    assert gs["score"] == sum(t["max_score"] for t in gs["tests"]) == 100


def test_stubs_score_zero_and_are_not_attempted(zygote):
    rep = grade(STUBS, zygote)
    assert rep.score == 0
    for r in rep.exercises:
        assert r.status == "not attempted", (r.id, r.status, r.feedback)
        assert r.cases and not any(c.passed for c in r.cases)


def test_a_missing_module_is_not_attempted_and_costs_nothing_else(zygote, tmp_path):
    sub = copy_solutions(tmp_path)
    (sub / "heads.py").unlink()
    rep = by_id(grade(sub, zygote))
    for id, r in rep.items():
        if MODULE_OF[id] == "heads":
            assert (r.status, r.score) == ("not attempted", 0), id
            assert "heads.py is not in the submission" in r.feedback
        else:  # layer.py imports split_heads: the reference stands in for it (uses)
            assert r.score == r.max_score, (id, r.feedback)


# -------------------------------------------------------------------- one mistake once

def test_a_wrong_attention_still_gets_full_marks_on_the_layer(zygote, tmp_path):
    sub = copy_solutions(tmp_path)
    with open(sub / "attention.py", "a") as f:  # redefined below the original: no 1/sqrt(d_k)
        f.write("\n\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
                "    w = masked_softmax(q @ np.swapaxes(k, -1, -2), mask)\n"
                "    return w @ v, w\n")
    rep = by_id(grade(sub, zygote, exercises=["scaled_dot_product_attention", "multi_head_attention"]))
    assert rep["scaled_dot_product_attention"].score < rep["scaled_dot_product_attention"].max_score
    mha = rep["multi_head_attention"]
    assert (mha.status, mha.score) == ("passed", mha.max_score)
    uses = EXERCISES["multi_head_attention"].uses
    assert "scaled_dot_product_attention" in uses
    assert any("graded with the reference" in n and "scaled_dot_product_attention" in n for n in mha.notes)


# ------------------------------------------------------------------ submissions as zips

def test_zip_of_the_folder_and_zip_of_the_files(zygote, tmp_path):
    for nested in (True, False):
        archive = tmp_path / f"sub_{nested}.zip"
        with zipfile.ZipFile(archive, "w") as z:
            for f in SOLUTIONS.glob("*.py"):
                z.write(f, f"mha_exercises/{f.name}" if nested else f.name)
        rep = grade(archive, zygote, exercises=["softmax", "split_heads"])
        assert rep.score == rep.max_score == 9, nested


def test_zip_with_path_traversal_and_a_bomb_extracts_nothing(zygote, tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("../../escaped.py", "print('x')")
        z.writestr("/abs/escaped.py", "print('x')")
        z.writestr("attention.py", (SOLUTIONS / "attention.py").read_text())
        z.writestr("masking.py", (SOLUTIONS / "masking.py").read_text())
        z.writestr("heads.py", "# " + "x" * (2 * 2**20))  # over the size cap
    from autograder.submission import SubmissionError, load

    with pytest.raises(SubmissionError, match="larger than"):
        load(archive)
    assert not (tmp_path.parent / "escaped.py").exists()
    with zipfile.ZipFile(archive, "a") as z:  # without the oversized module: graded normally
        pass
    ok = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(ok, "w") as dst:
        for info in src.infolist():
            if info.filename != "heads.py":
                dst.writestr(info, src.read(info))
    assert set(load(ok).sources) == {"attention", "masking"}
    assert grade(ok, zygote, exercises=["softmax"]).score == 5


# ------------------------------------------------------------------------ the CLI

def test_cli_selection_json_gradescope_and_exit_code(tmp_path):
    out_json, out_gs = tmp_path / "r.json", tmp_path / "gs" / "results.json"
    proc = run_cli("solutions", "--exercise", "masked_softmax", "-e", "causal_mask",
                   "--json", out_json, "--gradescope", out_gs, "--seed", "195529710")
    assert proc.returncode == 0, proc.stderr
    assert "masked_softmax" in proc.stdout and "total" in proc.stdout and "11/11" in proc.stdout

    full = json.loads(out_json.read_text())
    assert [e["id"] for e in full["exercises"]] == ["causal_mask", "masked_softmax"]  # course order
    assert full["seed"] == 195529710 and full["score"] == full["max_score"] == 11
    assert len(full["submission_sha256"]) == 64
    assert set(full["versions"]) == {"python", "numpy", "torch"}
    for e in full["exercises"]:
        assert e["status"] in STATUSES and e["cases"]
        assert {"name", "score", "max_score", "passed", "feedback", "diagnosis"} <= set(e["cases"][0])

    # The same writer as the Gradescope bundle's: one test per exercise, worth its whole
    # points, the seed nowhere (it would let a learner regenerate the hidden cases).
    gs = json.loads(out_gs.read_text())
    assert gs["score"] == 11 and isinstance(gs["execution_time"], float) and gs["output"]
    assert [(t["name"], t["score"], t["max_score"], t["visibility"]) for t in gs["tests"]] == [
        ("causal_mask", 4.0, 4.0, "visible"), ("masked_softmax", 7.0, 7.0, "visible")]
    assert "195529710" not in json.dumps(gs) and gs["stdout_visibility"] == "hidden"


def test_cli_gradescope_on_the_stubs_reports_failed_tests(tmp_path):
    out = tmp_path / "results.json"
    proc = run_cli(STUBS, "--gradescope", out, "--quiet", "-e", "softmax", "-e", "padding_mask")
    assert proc.returncode == 0 and proc.stdout.strip() == "0/9"
    tests = [t for t in json.loads(out.read_text())["tests"] if t["visibility"] == "visible"]
    assert [t["name"] for t in tests] == ["softmax", "padding_mask"]
    assert all(t["status"] == "failed" and t["score"] == 0 for t in tests)
    assert all("NotImplementedError" in t["output"] and "not attempted" in t["output"] for t in tests)


def test_cli_exit_codes_for_what_the_grader_cannot_run(tmp_path):
    missing = tmp_path / "no_such_dir"
    proc = run_cli(missing)
    assert proc.returncode == 2 and str(missing) in proc.stderr
    proc = run_cli("solutions", "--exercise", "not_an_exercise")
    assert proc.returncode == 2 and "not_an_exercise" in proc.stderr
    (tmp_path / "notes.txt").write_text("hello")
    proc = run_cli(tmp_path / "notes.txt")
    assert proc.returncode == 2 and "notes.txt" in proc.stderr


def test_same_seed_same_cases_other_seed_other_cases():
    ex = EXERCISES["masked_softmax"]
    a = ex.cases(runner.case_rng(0, ex.id))
    b = ex.cases(runner.case_rng(0, ex.id))
    c = ex.cases(runner.case_rng(1, ex.id))
    flat = lambda cases: [repr(sorted(c.inputs.items(), key=str)) for c in cases]  # noqa: E731
    assert flat(a) == flat(b) and flat(a) != flat(c)


# --------------------------------------------------------------------- the table

def test_the_table_shows_status_score_feedback_and_total(zygote, tmp_path):
    sub = copy_solutions(tmp_path)
    (sub / "masking.py").write_text("raise ValueError('broken on purpose')\n")
    rep = grade(sub, zygote, exercises=["softmax", "padding_mask"])
    from rich.console import Console

    console = Console(width=250, record=True, color_system=None)
    report.print_table(rep, console)
    text = console.export_text()
    assert "softmax" in text and "5/5" in text and "passed" in text
    assert "padding_mask" in text and "0/4" in text and "error" in text
    assert "ValueError at line 1: broken on purpose" in text
    assert "total" in text and "5/9" in text


# ------------------------------------------------------------- check() in a notebook

def test_check_in_a_notebook_grades_the_active_backend(capsys, monkeypatch):
    from mha_exercises.check import check
    from solutions.attention import softmax

    monkeypatch.setenv("MHA_BACKEND", "solutions")
    check(softmax)  # a function: its __name__ is the exercise id
    out = capsys.readouterr().out
    assert out.startswith("✔ softmax: 5/5 points, passed")

    monkeypatch.setenv("MHA_BACKEND", "learner")  # the unfilled stubs
    check("masked_softmax")
    out = capsys.readouterr().out
    assert out.startswith("✘ masked_softmax: 0/7 points, not attempted") and "NotImplementedError" in out

    check("no_such_exercise")
    assert "could not grade" in capsys.readouterr().out


def test_check_verdict_names_the_likely_bug_once(tmp_path, zygote):
    from mha_exercises.check import verdict

    sub = copy_solutions(tmp_path)
    with open(sub / "attention.py", "a") as f:  # softmax without the max subtraction
        f.write("\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)\n    return e / e.sum(axis=axis, keepdims=True)\n")
    text = verdict(grade(sub, zygote, exercises=["softmax"]).to_dict())
    assert text.startswith("✘ softmax:") and "partial" in text
    # Said in the summary, then one failing check as the example: not once per failing check.
    flat = " ".join(text.lower().split())  # as printed, wrapped at 88 columns
    assert text.count("•") == 1 and flat.count("without subtracting the max") == 2
