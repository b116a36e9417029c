"""The Makefile never installs through, or runs from, a .venv that is a symbolic link: in a
second checkout, such a link points at the first one's environment, and installing through it
repointed the first checkout's editable install at the second."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["install", "gradescope", "grade"])
def test_a_linked_venv_is_refused_and_left_untouched(tmp_path, target):
    checkout, other = tmp_path / "clone", tmp_path / "original" / ".venv"
    (other / "bin").mkdir(parents=True)
    (other / "bin" / "python").write_text("#!/bin/sh\necho ran >> \"$0.log\"\n")
    (other / "bin" / "python").chmod(0o755)
    (other / ".installed").write_text("")
    checkout.mkdir()
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, checkout / name)
    (checkout / ".venv").symlink_to(other)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    run = subprocess.run(["make", target], cwd=checkout, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert f".venv is a symbolic link to {other}" in run.stderr and "rm .venv" in run.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing ran through it
