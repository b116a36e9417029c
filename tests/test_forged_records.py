"""A child's "did not import" records are the child's words: held to what the grader saw of
that module's own exercises in the same run (``runner.imports_held_to_their_own_runs``).
``tests/adversarial/forge_kinds.py`` writes such a record for every other module; before, the
notes then said that all 8 modules fail to import (no child text, but false)."""
import shutil
from pathlib import Path

from autograder.grading import runner
from autograder.spec import CaseResult, ExerciseResult

ROOT = Path(__file__).resolve().parent.parent


def _result(ex_id, kinds, notes=(), not_imported=None):
    cases = [CaseResult(f"case {i}", 0.0, 1.0, kind is None, "", cause={} if kind is None else {"kind": kind})
             for i, kind in enumerate(kinds)]
    return ExerciseResult(ex_id, "passed", 0.0, 1.0, cases, "", list(notes), not_imported=dict(not_imported or {}))


def test_a_record_is_dropped_where_the_module_s_own_run_imported_it():
    forged = "your file masking.py does not import (it raised an exception while it was imported: ...)"
    kept = "your file heads.py does not import (it raised an exception while it was imported: ...)"
    results = [_result("softmax", [None, None], [forged, kept, "graded with the reference softmax"],
                       {"masking": "Leak", "heads": "Leak"}),
               _result("padding_mask", [None, "exception"]),  # masking imported: a case got past it
               _result("split_heads", ["import", "import"])]  # heads did not: the record stands
    held = runner.imports_held_to_their_own_runs(results)
    assert held[0].notes == [kept, "graded with the reference softmax"]
    assert held[0].not_imported == {"heads": "Leak"}


def test_forged_records_leave_no_false_note_in_a_real_run(tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    for f in (ROOT / "solutions").glob("*.py"):
        if f.name != "__init__.py":
            shutil.copy(f, sub / f.name)
    with open(sub / "attention.py", "a") as f:
        f.write("\n\n" + (ROOT / "tests" / "adversarial" / "forge_kinds.py").read_text())
    report = runner.grade_submission(sub, exercises=["softmax", "padding_mask", "split_heads"], time_limit=20)
    notes = " ".join(n for r in report.exercises for n in r.notes)
    assert "masking.py does not import" not in notes and "heads.py does not import" not in notes, notes
    assert {r.id: r.status for r in report.exercises}["padding_mask"] == "passed"
