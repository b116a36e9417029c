"""The import rules (``.importlinter``) hold, and the check fails when they are broken.

``lint-imports`` reads every import statement of the packages; the rules are the grader's
audiences (classroom above grading above public code above the learner side), the one door to
the reference solutions, and what may run before the zygote is forked. Each broken case below
edits a copy of the packages, never the repository.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("autograder", "solutions", "lab", "mha_exercises")
LINT = Path(sys.executable).with_name("lint-imports")


def lint(where: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache", "--no-logo"], cwd=where, capture_output=True, text=True,
                          timeout=300)


def test_the_contract_holds():
    proc = lint(ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in proc.stdout, proc.stdout[-2000:]


@pytest.mark.parametrize("module, line, contract, edge", [
    # public code importing the grader's secret folder
    ("autograder/report.py", "from .grading import runner", "Each audience sits above",
     "autograder.report -> autograder.grading.runner"),
    # the same, inside a function (read as well: the contract is about imports, not their time)
    ("autograder/service/server.py", "def _f():\n    from ..grading import judge", "Each audience sits above",
     "autograder.service.server -> autograder.grading.judge"),
    # the learner side reaching the classroom
    ("autograder/isolation/cases.py", "from ..classroom import batch", "The learner side imports nothing",
     "autograder.isolation.cases -> autograder.classroom.batch"),
    # the references through another door than grading/
    ("autograder/selfcheck.py", "import solutions.attention", "The reference solutions have one door",
     "autograder.selfcheck -> solutions.attention"),
    # a class's stages out of order: the intake reading what is written, the rules what a batch runs
    ("autograder/classroom/intake/controls.py", "from ..write import feedback", "A class goes through its stages",
     "autograder.classroom.intake.controls -> autograder.classroom.write.feedback"),
    ("autograder/classroom/rules/late.py", "def _f():\n    from .. import batch", "A class goes through its stages",
     "autograder.classroom.rules.late -> autograder.classroom.batch"),
    # the release builder and mha-grade are apart
    ("autograder/classroom/release/__init__.py", "from .. import cli", "A class goes through its stages",
     "autograder.classroom.release -> autograder.classroom.cli"),
    # torch before the zygote exists
    ("autograder/isolation/reexec.py", "import torch", "What runs before the zygote is forked",
     "autograder.isolation.reexec -> torch"),
])
def test_a_broken_rule_fails_the_check(tmp_path, module, line, contract, edge):
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pt", "*.npz"))
    shutil.copy(ROOT / ".importlinter", tmp_path)
    with open(tmp_path / module, "a") as f:
        f.write(f"\n{line}\n")
    proc = lint(tmp_path)
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken and edge in broken, proc.stdout[-4000:]
