"""Submission intake: exercise files found wherever a learner put them, and said so.

Each case is one way a real class hands work in; each must grade to its honest score (here:
what is read, which decides the score) with a message saying what was taken and ignored.
"""
import os
import stat
import zipfile
from pathlib import Path

import pytest

from autograder.submission import SubmissionError, load

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
MODULES = ("attention", "masking", "heads", "layer", "analysis", "pruning", "efficient")


def _solutions_into(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for m in MODULES:
        (folder / f"{m}.py").write_text((SOLUTIONS / f"{m}.py").read_text())
    return folder


def _zip_of(folder: Path, target: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(target, "w") as z:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                z.write(f, prefix + f.relative_to(folder).as_posix())
    return target


def _graded_all(sub) -> None:
    assert set(sub.sources) == set(MODULES)
    for m in MODULES:
        assert sub.sources[m] == (SOLUTIONS / f"{m}.py").read_text()


def test_files_inside_a_folder_such_as_hw3(tmp_path):
    _solutions_into(tmp_path / "ada" / "hw3")
    sub = load(tmp_path / "ada")
    _graded_all(sub)
    assert "attention.py (hw3/attention.py)" in sub.taken


def test_a_zip_uploaded_as_a_file_in_the_submission(tmp_path):
    _zip_of(_solutions_into(tmp_path / "work"), tmp_path / "upload.zip", "mha_exercises/")
    (tmp_path / "gs").mkdir()
    os.replace(tmp_path / "upload.zip", tmp_path / "gs" / "upload.zip")
    sub = load(tmp_path / "gs")
    _graded_all(sub)
    assert any("upload.zip/mha_exercises/attention.py" in t for t in sub.taken)


def test_mha_exercises_next_to_a_stray_scratch_file_and_a_repository_tree(tmp_path):
    repo = tmp_path / "repo"
    _solutions_into(repo / "mha_exercises")
    (repo / "scratch.py").write_text("print('trying things')\n")
    (repo / "attention.py").write_text("def softmax(x): return x  # an old draft at the top\n")
    (repo / "solutions").mkdir()
    (repo / "solutions" / "attention.py").write_text("# not the learner's\n")
    (repo / "README.md").write_text("# my course\n")
    sub = load(repo)
    _graded_all(sub)
    said = " ".join(sub.ignored)
    assert "attention.py (another copy of attention.py; mha_exercises/attention.py was graded)" in said
    assert "solutions/ (not the learner's exercise code)" in said
    assert "scratch.py" in said and "README.md" in said


def test_unfilled_stub_gives_way_to_the_notebook_that_defines_it(tmp_path):
    (tmp_path / "mha_exercises").mkdir()
    (tmp_path / "mha_exercises" / "attention.py").write_text((ROOT / "mha_exercises" / "attention.py").read_text())
    (tmp_path / "01_attention.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "metadata": {}, "source": '
        '"import numpy as np\\ndef softmax(x, axis=-1):\\n    e = np.exp(x - x.max(axis, keepdims=True))\\n'
        '    return e / e.sum(axis, keepdims=True)\\n"}]}')
    sub = load(tmp_path)
    assert "def softmax" in sub.sources["attention"] and "NotImplementedError" not in sub.sources["attention"]
    assert any("still the unfilled stub" in i for i in sub.ignored)


def test_nothing_that_fits_is_refused_with_what_was_expected(tmp_path):
    (tmp_path / "notes.txt").write_text("I did not do it")
    (tmp_path / "scratch.py").write_text("x = 1\n")
    with pytest.raises(SubmissionError, match=r"no exercise files found in .*: expected attention\.py, "
                                              r"masking\.py, .* or the chapter notebooks"):
        load(tmp_path)


def test_zip_symlinks_and_parent_entries_are_refused_with_a_message(tmp_path):
    buf = tmp_path / "evil.zip"
    with zipfile.ZipFile(buf, "w") as z:
        link = zipfile.ZipInfo("masking.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/autograder/source/solutions/masking.py")
        z.writestr("../heads.py", "x = 1\n")
        z.writestr("attention.py", (SOLUTIONS / "attention.py").read_text())
    sub = load(buf)
    assert set(sub.sources) == {"attention"}
    said = " ".join(sub.ignored)
    assert "masking.py (a symbolic link, refused)" in said
    assert "../heads.py (a path leading outside the zip, refused)" in said


def test_symlinks_in_a_folder_are_not_followed(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "attention.py").symlink_to(SOLUTIONS / "attention.py")
    (tmp_path / "sub" / "linked").symlink_to(SOLUTIONS, target_is_directory=True)
    (tmp_path / "sub" / "masking.py").write_text("def padding_mask(v, n): return None\n")
    sub = load(tmp_path / "sub")
    assert set(sub.sources) == {"masking"}
    assert any("attention.py (a symbolic link, not followed)" in i for i in sub.ignored)
    assert any("linked/ (a symbolic link, not followed)" in i for i in sub.ignored)


def test_intake_reaches_the_batch_report(tmp_path):
    from autograder.classroom import batch

    _solutions_into(tmp_path / "class" / "ada" / "hw3")
    (tmp_path / "class" / "ada" / "scratch.py").write_text("x = 1\n")

    def fake(path, exercises=None, seed=0):
        return {"score": 1.0, "max_score": 1.0, "exercises": [
            {"id": "softmax", "status": "passed", "score": 1.0, "max_score": 1.0, "cases": [], "feedback": "",
             "notes": []}], "seed": seed, "submission": str(path)}

    batch.run_batch(tmp_path / "class", tmp_path / "out", jobs=1, grade=fake, progress=False)
    import json
    report = json.loads((tmp_path / "out" / "reports" / "ada.json").read_text())
    assert "attention.py (hw3/attention.py)" in report["intake"]["taken"]
    assert any("scratch.py" in i for i in report["intake"]["ignored"])
    assert str(tmp_path) not in report["submission"]
    md = (tmp_path / "out" / "feedback" / "ada.md").read_text()
    assert "hw3/attention.py" in md and "scratch.py" in md


def test_each_layout_grades_to_its_honest_score(tmp_path):
    """The real pipeline on the layouts that used to score 0: full marks on two exercises."""
    from autograder.grading.runner import grade_submission
    from autograder.isolation import sandbox

    layouts = {}
    layouts["hw3"] = _solutions_into(tmp_path / "a" / "hw3").parent
    _zip_of(_solutions_into(tmp_path / "w"), tmp_path / "b.zip", "course/mha_exercises/")
    (tmp_path / "b").mkdir()
    os.replace(tmp_path / "b.zip", tmp_path / "b" / "submission.zip")
    layouts["zip in upload"] = tmp_path / "b"
    layouts["repo + scratch"] = _solutions_into(tmp_path / "c" / "mha_exercises").parent
    (tmp_path / "c" / "scratch.py").write_text("import os\nos._exit(1)\n")
    zygote = sandbox.Zygote()
    try:
        for name, path in layouts.items():
            report = grade_submission(path, exercises=["softmax", "split_heads"], zygote=zygote)
            assert report.score == report.max_score == 9, name
    finally:
        zygote.close()
