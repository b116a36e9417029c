"""One hash of what a grade depends on (autograder/depends.py): the warm service's restart, the
reference outputs' cache on disk and a batch's regrade all change with it, and with nothing else."""
import os
import shutil
import subprocess
import sys

from solution_copies import ROOT

from autograder import depends, service
from autograder.classroom import batch

KEYS = """
from autograder import depends, service
from autograder.grading import cache
from autograder.classroom import batch
import autograder
assert autograder.__file__.startswith({root!r}), autograder.__file__
print(service.fingerprint("grade"), cache.key(), batch.grader_fingerprint(), depends.fingerprint("selfcheck"))
"""


def keys(root) -> list[str]:
    """The service's, the cache's, the batch's and the self-check's keys, in a fresh process
    importing the grader at ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", KEYS.format(root=str(root))], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_changed_grading_source_changes_every_key_and_a_class_tool_none(tmp_path):
    for package in ("autograder", "solutions", "lab", "mha_exercises"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    before = keys(tmp_path)
    assert before[0][:32] == before[1]  # the service's hash is the cache's key: one function

    check = tmp_path / "autograder" / "grading" / "exercises" / "masking.py"
    check.write_text(check.read_text() + "\n# a changed check\n")
    changed = keys(tmp_path)
    assert all(a != b for a, b in zip(before, changed)), (before, changed)

    solution = tmp_path / "solutions" / "masking.py"
    solution.write_text(solution.read_text() + "\n# a changed solution\n")
    again = keys(tmp_path)
    assert [a != b for a, b in zip(changed, again)] == [True, True, True, False]  # no references in a self-check

    tool = tmp_path / "autograder" / "classroom" / "write" / "summary.py"
    tool.write_text(tool.read_text() + "\n# a changed class tool: it grades nothing\n")
    assert keys(tmp_path) == again


def test_the_service_and_the_batch_take_the_one_hash(monkeypatch):
    assert service.fingerprint is depends.fingerprint
    first = batch.grader_fingerprint()
    real = depends.fingerprint
    monkeypatch.setattr(depends, "fingerprint", lambda kind: real(kind) + "-edited")
    assert batch.grader_fingerprint() != first


def test_the_hash_covers_checks_solutions_lab_and_public_cases():
    graded = {name for name, _ in depends.files("grade")}
    assert {"autograder/grading/exercises/masking.py", "autograder/isolation/drivers/core.py",
            "solutions/masking.py", "lab/language_model.py"} <= graded
    assert not any(name.startswith("autograder/classroom/") for name in graded)
    assert not any(name.startswith(("solutions/", "lab/")) for name, _ in depends.files("selfcheck"))
