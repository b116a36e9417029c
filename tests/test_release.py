"""The learner release: no solution code in it, and a self-check that works without the solutions."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_release  # noqa: E402

from autograder import SECRET  # noqa: E402  what the self-check must run without (unimportable there)

HIDDEN = SECRET
WRONG_SOFTMAX = "\n\ndef softmax(x, axis=-1):\n    e = np.exp(x)  # no max subtraction\n    return e / e.sum(axis=axis, keepdims=True)\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist") / "release"
    assert build_release.main(["--out", str(out)]) == 0
    return out


def _bodies(source: str) -> dict[str, str]:
    """``ast.dump`` of every function body (docstring dropped) -> the function's name."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            if body:
                found[ast.dump(ast.Module(body=body, type_ignores=[]))] = node.name
    return found


def _release_code(release: Path):
    for f in release.rglob("*.py"):
        yield f, f.read_text()
    for f in release.rglob("*.ipynb"):  # the chapters' code cells too
        cells = json.loads(f.read_text())["cells"]
        yield f, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_release_holds_no_solution_judge_or_bug_code(release):
    names = {p.relative_to(release).as_posix() for p in release.rglob("*")}
    assert not any(n == "solutions" or n.startswith("solutions/") for n in names)
    assert not any(n.startswith(("autograder/grading", "autograder/classroom", "tests/", "gradescope/"))
                   for n in names)
    assert "autograder/cli.py" not in names
    assert {"book/01_attention.ipynb", "mha_exercises/attention.py", "autograder/selfcheck.py",
            "autograder/public_cases/softmax.npz", "README.md"} <= names
    assert release.with_suffix(".zip").exists()

    secret = {}  # every function body of the solutions, the checks (known bugs) and the judge
    for f in [*(ROOT / "solutions").glob("*.py"), *(ROOT / "autograder" / "grading").rglob("*.py")]:
        secret.update({body: f"{f.relative_to(ROOT)}:{name}" for body, name in _bodies(f.read_text()).items()})
    assert len(secret) > 30
    leaks = [f"{f.relative_to(release)}:{name} == {secret[body]}"
             for f, source in _release_code(release) for body, name in _bodies(source).items() if body in secret]
    assert leaks == []


def _self_check(release: Path, submission: Path, *exercises: str) -> dict:
    """``python -m autograder.selfcheck`` from the release, with the solutions and judge unimportable."""
    out = submission.parent / f"{submission.name}.json"
    argv = [str(submission), "--json", str(out), "--quiet", *(x for e in exercises for x in ("--exercise", e))]
    code = (f"import runpy, sys\nfor name in {HIDDEN!r}:\n    sys.modules[name] = None\n"
            f"sys.argv = ['autograder.selfcheck', *{argv!r}]\nrunpy.run_module('autograder.selfcheck', run_name='__main__')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MHA_BACKEND")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=release, env=dict(env, OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_self_check_passes_correct_and_fails_wrong(release, tmp_path):
    correct = tmp_path / "correct"
    correct.mkdir()
    for f in (ROOT / "solutions").glob("*.py"):
        if f.name != "__init__.py":
            (correct / f.name).write_text(f.read_text())
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    for f in (ROOT / "mha_exercises").glob("*.py"):
        (wrong / f.name).write_text(f.read_text())
    (wrong / "attention.py").write_text((wrong / "attention.py").read_text() + WRONG_SOFTMAX)

    good = _self_check(release, correct)  # every exercise: each stored case must round-trip
    stored = sorted(p.stem for p in (release / "autograder" / "public_cases").glob("*.json"))
    assert sorted(e["id"] for e in good["exercises"]) == stored and len(stored) >= 11
    assert {e["status"] for e in good["exercises"]} == {"passed"}
    assert good["score"] == good["max_score"] > 0
    assert good["seed"] != 0  # public cases: not the seed of a grading run

    exercises = ("softmax", "causal_mask", "multi_head_attention")

    bad = _self_check(release, wrong, *exercises)
    status = {e["id"]: e for e in bad["exercises"]}
    assert status["softmax"]["status"] in ("failed", "partial") and status["softmax"]["score"] < 5
    assert any("without subtracting the max" in (c["diagnosis"] or "") for c in status["softmax"]["cases"])
    assert status["causal_mask"]["status"] == "not attempted"
    assert bad["score"] < sum(e["max_score"] for e in bad["exercises"])
