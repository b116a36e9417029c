"""bench/gradebook_class.py on a class of 10: built as an instructor receives it (Gradescope
export, Canvas roster, a group, strangers, misnamed files, late ones, extensions and
adjustments), graded by the real isolated grader, every row checked against what was planted,
then a rerun that must keep the extensions and adjustments. The class of 300 is the same
script run by hand (its numbers are in the README)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import gradebook_class  # noqa: E402


def test_a_small_class_is_graded_as_planted_in_every_file(tmp_path, capsys):
    status = gradebook_class.main(["--n", "10", "--jobs", "2", "--keep", str(tmp_path / "class")])
    said = capsys.readouterr().out
    assert status == 0, said
    assert "every row of grades.csv, canvas.csv and feedback matches what was planted (12 learners)" in said
