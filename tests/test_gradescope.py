"""The Gradescope bundle, run in a simulated ``/autograder`` layout under a temporary directory.

``run_autograder`` must always leave a valid ``results.json``: for a correct submission (full
marks, tests named by exercise id), a crashing one (score 0, the crash explained) and when the
grader itself cannot run (a fallback with score 0 and the error). Run as root, as on
Gradescope, the learner's code must not be able to read the solutions or the hidden seed.
"""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_gradescope  # noqa: E402

# Correct, unless it can read a file of the grader's: then it returns a wrong answer, so the
# score shows whether the learner's process could read the solutions or the seed.
PROBING_SOFTMAX = '''
import numpy as np

def softmax(x, axis=-1):
    for secret in {secrets!r}:
        try:
            open(secret).read()
            return np.zeros_like(x)
        except OSError:
            pass
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist") / "gradescope_autograder.zip"
    assert build_gradescope.main(["--out", str(out), "--seed", "4242"]) == 0
    return out


def _layout(tmp_path: Path, bundle: Path, files: dict[str, str]) -> Path:
    """``/autograder`` as Gradescope prepares it: source unpacked, submission, results."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(root / "source")
    for script in ("run_autograder", "setup.sh"):
        (root / "source" / script).chmod(0o755)  # zipfile does not restore modes; Gradescope's unzip does
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    (root / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    for name, text in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_text(text)
    return root


def _run(root: Path, python: str = sys.executable, **env) -> dict:
    environ = dict(os.environ, AUTOGRADER_ROOT=str(root), MHA_PYTHON=python, MHA_GRADE_USER="nobody",
                   MHA_GRADE_ARGS="--exercise softmax", OMP_NUM_THREADS="1", **env)
    environ.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", str(root / "run_autograder")], env=environ, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_bundle_follows_gradescope_layout(bundle):
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        requirements = z.read("requirements-grader.txt").decode().splitlines()
        assert z.read("seed").decode().strip() == "4242"
    assert {"setup.sh", "run_autograder", "autograder/cli.py", "autograder/isolation/worker.py",
            "solutions/attention.py", "mha_exercises/attention.py"} <= names
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert not any("__pycache__" in n for n in names)
    pins = [r for r in requirements if r and not r.startswith("#")]
    assert pins and all("==" in r for r in pins)
    assert "torch==2.13.0" in (ROOT / "gradescope" / "setup.sh").read_text()


def test_correct_submission_full_marks_and_solutions_unreadable(tmp_path, bundle):
    root = tmp_path / "autograder"
    # Only root can drop to another user (as on Gradescope); run as anyone else, the learner's
    # code is that same user and the probe has nothing to prove.
    secrets = [str(root / "source" / "solutions" / "attention.py"), str(root / "source" / "seed")]
    secrets = secrets if os.geteuid() == 0 else []
    root = _layout(tmp_path, bundle, {"mha_exercises/attention.py": PROBING_SOFTMAX.format(secrets=secrets)})
    results = _run(root)
    assert results["score"] == 5.0, results
    assert results["tests"] and all(t["name"].startswith("softmax: ") for t in results["tests"])
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] for t in results["tests"])
    assert "seed 4242" in results["output"]
    assert all(open(s).read() for s in secrets)  # the probe is real: the grader (root) reads them


def test_crashing_submission_scores_zero_with_a_report(tmp_path, bundle):
    root = _layout(tmp_path, bundle, {"attention.py": "import os\nos._exit(0)\n"})
    results = _run(root)
    assert results["score"] == 0
    assert results["tests"] and {t["status"] for t in results["tests"]} == {"failed"}
    assert all(t["name"].startswith("softmax") for t in results["tests"])


def test_results_written_even_when_the_grader_cannot_run(tmp_path, bundle):
    root = _layout(tmp_path, bundle, {"attention.py": "x = 1\n"})
    (root / "source" / "seed").write_text("not a number\n")  # the grader refuses its options
    results = _run(root)
    assert results["score"] == 0.0 and results["tests"] == []
    assert "could not grade" in results["output"] and "invalid int value" in results["output"]

    results = _run(root, python="/nonexistent/python")  # not even a Python
    assert results["score"] == 0.0 and "could not start" in results["output"]
