"""Build the learner release: ``make release`` -> ``dist/release/`` and ``dist/release.zip``.

What learners get in a graded course: the book source, the exercise stubs and their support
code, and a self-check (``python -m autograder.selfcheck``, and ``check(...)`` in the notebooks)
that runs on *public* cases stored as inputs and expected outputs. Those are computed here,
from the reference solutions, which stay behind: the release holds no ``solutions/``, no
judge, no checks with their known-bug implementations, no tests and no Gradescope bundle.
Final grading (``mha-grade``, Gradescope) draws hidden cases with another seed.

    python scripts/build_release.py [--out dist/release]
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOP_FILES = ("_config.yml", "_toc.yml", "requirements.txt", "pyproject.toml")
DIRECTORIES = ("book", "mha_exercises", "lab")
SKIP = {"__pycache__", ".ipynb_checkpoints", "_build", ".pytest_cache"}


def public_cases(directory: Path) -> dict[str, int]:
    """Each exercise's public cases with the reference's and the known bugs' outputs."""
    from autograder import selfcheck
    from autograder.grading import judge
    from autograder.grading.exercises import EXERCISES, draw

    counts = {}
    for exercise in EXERCISES.values():
        cases = draw.public_cases(exercise)  # a stream no grading seed draws from
        expected = [judge.reference_output(case) for case in cases]
        bugs = [judge.shown_bugs(exercise, c, e) for c, e in zip(cases, expected)]  # they name a mistake
        selfcheck.store(exercise, cases, expected, bugs, directory)
        counts[exercise.id] = len(cases)
    return counts


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n in SKIP or n.endswith(".pyc")])


def shipped_grader_files() -> list[Path]:
    """The grader's files a learner gets: all but ``autograder.SECRET`` (the rule, not a list)."""
    from autograder import SECRET, within

    shipped = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if "__pycache__" not in parts and not within(module, SECRET):
            shipped.append(path)
    return shipped


def _pyproject(text: str) -> str:
    # The release has no full grader: its console script is the public self-check.
    text = text.replace('mha-grade = "autograder.cli:main"', 'mha-check = "autograder.selfcheck:main"')
    packages = 'include = ["mha_exercises*", "autograder*", "lab*"]'
    return re.sub(r'include = \[[^\]]*\]', packages, text, count=1)


README = """# Multi-head attention, from the ground up: learner release

The chapters are in `book/` (Jupyter notebooks), your exercises in `mha_exercises/`: replace
each `raise NotImplementedError` with your code. Set up once:

```bash
python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -r requirements.txt && .venv/bin/pip install -e .
```

Check your work on the public practice cases, all exercises or one:

```bash
.venv/bin/python -m autograder.selfcheck mha_exercises
.venv/bin/python -m autograder.selfcheck mha_exercises --exercise softmax
```

or `check("softmax")` in a chapter notebook. Your code runs in a separate, confined process;
the check compares it with stored expected outputs and names the likely mistake when it
recognises one. Your grade comes from the same checks on hidden cases (other random inputs),
so pass them because your code is right, not because it fits these cases.
"""


def build(out: Path) -> dict[str, int]:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in DIRECTORIES:
        if (ROOT / name).is_dir():
            _copy_tree(ROOT / name, out / name)
    for name in TOP_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, out / name)
    (out / "pyproject.toml").write_text(_pyproject((ROOT / "pyproject.toml").read_text()))
    (out / "README.md").write_text(README)
    for path in shipped_grader_files():
        target = out / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    counts = public_cases(out / "autograder" / "public_cases")
    shutil.make_archive(str(out), "zip", out.parent, out.name)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "release")
    args = parser.parse_args(argv)
    counts = build(args.out)
    print(f"{args.out} (+ {args.out.name}.zip): {len(counts)} exercises, {sum(counts.values())} public cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
