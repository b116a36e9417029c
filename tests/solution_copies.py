"""Submissions the grader's end-to-end tests build: the reference solutions, one module edited."""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def edited_solutions(tmp_path: Path, module: str | None = None, old: str = "", new: str = "") -> Path:
    """A copy of ``solutions/`` as a submission directory, with ``old`` replaced by ``new`` in
    ``<module>.py`` (the edit must apply: a stale test fails here, not with a puzzling score)."""
    submission = tmp_path / "submission"
    shutil.copytree(ROOT / "solutions", submission, ignore=shutil.ignore_patterns("__pycache__"))
    if module is not None:
        path = submission / f"{module}.py"
        source = path.read_text()
        assert old in source, f"{old!r} is no longer in solutions/{module}.py"
        path.write_text(source.replace(old, new))
    return submission
