"""The Gradescope bundle, run in a simulated ``/autograder`` layout under a temporary directory.

``run_autograder`` must always leave a valid ``results.json``: for a correct submission (full
marks, tests named by exercise id), a crashing one (score 0, the crash explained) and when the
grader itself cannot run (a fallback with score 0 and the error). Run as root, as on
Gradescope, the learner's code must not be able to read the solutions or the hidden seed.
"""
import json
import os
import re
import shutil
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


def _cli_reads_the_seed_from_a_file() -> bool:
    from autograder.classroom import cli
    return "--seed-file" in cli.parser().format_help()


needs_seed_file = pytest.mark.skipif(not _cli_reads_the_seed_from_a_file(),
                                     reason="mha-grade --seed-file comes from the confinement branch")


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


def _run(root: Path, python: str = sys.executable, log: list | None = None, **env) -> dict:
    """results.json of a run; ``log`` receives run_autograder's stdout (the instructor's view)."""
    environ = dict(os.environ, AUTOGRADER_ROOT=str(root), MHA_PYTHON=python, MHA_GRADE_USER="nobody",
                   MHA_GRADE_ARGS="--exercise softmax", OMP_NUM_THREADS="1", **env)
    environ.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", str(root / "run_autograder")], env=environ, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    if log is not None:
        log.append(proc.stdout)
    return json.loads((root / "results" / "results.json").read_text())


def test_bundle_follows_gradescope_layout(bundle):
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        requirements = z.read("requirements-grader.txt").decode().splitlines()
        assert z.read("seed").decode().strip() == "4242"
    assert {"setup.sh", "run_autograder", "python.sh", "debian-archive-keys.asc", "autograder/classroom/cli.py",
            "autograder/isolation/worker.py", "solutions/attention.py", "mha_exercises/attention.py"} <= names
    assert modes["setup.sh"] == modes["run_autograder"] == modes["python.sh"] == 0o755
    assert not any("__pycache__" in n for n in names)
    pins = [r for r in requirements if r and not r.startswith("#")]
    assert pins and all("==" in r for r in pins)
    assert "torch==2.13.0" in (ROOT / "gradescope" / "setup.sh").read_text()


def test_the_debian_archive_keys_are_the_ones_python_sh_names():
    """python.sh trusts Debian 12's python3.11 (Ubuntu 22.04 images) by these keys only."""
    gpg = shutil.which("gpg")
    if gpg is None:
        pytest.skip("gpg is not installed")
    keys = ROOT / "gradescope" / "debian-archive-keys.asc"
    shown = subprocess.run([gpg, "--show-keys", "--with-colons", str(keys)], capture_output=True, text=True,
                           check=True).stdout
    primary, key = [], None
    for fields in (line.split(":") for line in shown.splitlines()):
        key = fields[0] if fields[0] in ("pub", "sub") else key
        if fields[0] == "fpr" and key == "pub":
            primary.append(fields[9])
            key = None  # the primary key's own fingerprint only, not its subkeys'
    named = (ROOT / "gradescope" / "python.sh").read_text()
    assert len(primary) == 2
    for fingerprint in primary:
        assert " ".join(fingerprint[i:i + 4] for i in range(0, 40, 4)) in named


@needs_seed_file
def test_correct_submission_full_marks_and_solutions_unreadable(tmp_path, bundle):
    root = tmp_path / "autograder"
    # Only root can drop to another user (as on Gradescope); run as anyone else, the learner's
    # code is that same user and the probe has nothing to prove.
    secrets = [str(root / "source" / "solutions" / "attention.py"), str(root / "source" / "seed")]
    secrets = secrets if os.geteuid() == 0 else []
    root = _layout(tmp_path, bundle, {"mha_exercises/attention.py": PROBING_SOFTMAX.format(secrets=secrets)})
    results = _run(root)
    assert results["score"] == 5.0, results
    assert [(t["name"], t["score"], t["max_score"], t["status"]) for t in results["tests"]] == [
        ("softmax", 5.0, 5.0, "passed")]
    assert "4242" not in json.dumps(results)  # the seed is in no learner-visible output
    assert "mha_exercises/attention.py" in results["output"]  # what was graded
    assert all(open(s).read() for s in secrets)  # the probe is real: the grader (root) reads them


@needs_seed_file
def test_crashing_submission_scores_zero_with_a_report(tmp_path, bundle):
    root = _layout(tmp_path, bundle, {"attention.py": "import os\nos._exit(0)\n"})
    results = _run(root)
    assert results["score"] == 0
    assert results["tests"] and {t["status"] for t in results["tests"]} == {"failed"}
    assert [t["name"] for t in results["tests"] if t["visibility"] == "visible"] == ["softmax"]


@needs_seed_file
def test_hidden_inputs_written_into_exceptions_do_not_flow_out_at_once(tmp_path, bundle):
    """tests/adversarial/leak_inputs.py writes each hidden case's input into an exception of its
    own (letters a-p) or returns a wrong value: what the learner sees at once holds at most
    LEARNER_CHARS of that text for the exercise, no expected value, no number of the cases."""
    from autograder.classroom.write.gradescope import DETAILS_EXERCISE_BYTES, LEARNER_CHARS

    code = (ROOT / "solutions" / "attention.py").read_text() + "\n\n" + \
        (ROOT / "tests" / "adversarial" / "leak_inputs.py").read_text()
    results = _run(_layout(tmp_path, bundle, {"attention.py": code}))
    leak = re.compile(r"(?:LEAK|Leak)[a-p]+")
    visible = [results["output"]] + [t["output"] for t in results["tests"] if t["visibility"] == "visible"]
    later = "\n".join(t["output"] for t in results["tests"] if t["visibility"] == "after_published")
    # the attack ran and is told later, within the details' own budget (bytes of UTF-8: 1,440
    # characters before budgets, 600 bytes now), and at once within the visible cap (150 bytes)
    assert LEARNER_CHARS < sum(len(m.encode()) for m in leak.findall(later)) <= DETAILS_EXERCISE_BYTES
    assert 0 < sum(len(m.encode()) for text in visible for m in leak.findall(text)) <= LEARNER_CHARS
    assert "expected" in later and not any("expected" in text for text in visible)
    # no value of a hidden case, at once or later: "got …, expected …" says where, never what
    assert "got …, expected …" in later
    assert not re.findall(r"-?\d+\.\d{3,}(?:e[-+]?\d+)?", later + "\n".join(visible))
    assert not any("4242" in text for text in visible)
    assert [(t["name"], t["max_score"]) for t in results["tests"] if t["visibility"] == "visible"] == [
        ("softmax", 5.0)]


@needs_seed_file
def test_hostile_text_is_inert_in_the_results_and_the_log(tmp_path, bundle):
    """tests/adversarial/hostile_text.py: escape sequences, a carriage return, C1 CSI, a bidi
    override, rich markup in an exception: none of it raw in results.json or in the log."""
    code = (ROOT / "solutions" / "attention.py").read_text() + "\n\n" + \
        (ROOT / "tests" / "adversarial" / "hostile_text.py").read_text()
    log: list = []
    results = _run(_layout(tmp_path, bundle, {"attention.py": code}), log=log)
    text = "\n".join([results["output"], *(t["output"] for t in results["tests"]), log[0]])
    assert "\\x1b[2J" in text  # the attack ran, and shows as characters
    assert not [c for c in "\x1b\x07\r\x9b\u202e" if c in text]
    assert "[green]100/100[/]" in log[0]  # rich markup printed as written, not rendered
    assert results["output_format"] == "text" and results["tests"][0]["output_format"] == "text"


@needs_seed_file
def test_results_written_even_when_the_grader_cannot_run(tmp_path, bundle):
    root = _layout(tmp_path, bundle, {"attention.py": "x = 1\n"})
    (root / "source" / "seed").write_text("not a number\n")  # the grader refuses its options
    results = _run(root)
    assert results["score"] == 0.0 and results["tests"] == []
    assert "could not grade" in results["output"]

    results = _run(root, python="/nonexistent/python")  # not even a Python
    assert results["score"] == 0.0 and "could not start" in results["output"]


@needs_seed_file
def test_nothing_gradable_says_what_was_expected(tmp_path, bundle):
    root = _layout(tmp_path, bundle, {"notes.txt": "I did not do it"})
    results = _run(root)
    assert results["score"] == 0.0 and results["output"].startswith("Nothing could be graded: no exercise files")
    assert "expected attention.py" in results["output"] and str(root) not in results["output"]
    assert [(t["name"], t["score"], t["max_score"]) for t in results["tests"]] == [("softmax", 0.0, 5.0)]


# ---------------------------------------------------- results.json as learners read it

def _report(seed=987654321):
    case = lambda name, passed, fb="", d=None: {"name": name, "score": 0.0, "max_score": 1.0, "passed": passed,
                                                 "feedback": fb, "diagnosis": d}
    return {"seed": seed, "score": 12.3333333333, "max_score": 17.0, "wall_time": 1.5, "exercises": [
        {"id": "softmax", "status": "partial", "score": 3.3333333333, "max_score": 5.0, "feedback": "",
         "notes": [], "cases": [case("float32", True), case("huge logits", False,
                                 f"expected [0.5, 0.5] at seed {seed}, got [nan, nan]", "no max subtraction")]},
        {"id": "masked_softmax", "status": "passed", "score": 7.0, "max_score": 7.0, "feedback": "", "notes": [],
         "cases": [case("fully masked rows", True)]},
        {"id": "causal_mask", "status": "not attempted", "score": 0.0, "max_score": 4.0, "notes": [],
         "feedback": "not attempted: the stub still raises NotImplementedError", "cases": []}]}


def test_one_test_per_exercise_whole_points_adding_up_exactly():
    from autograder.classroom.write.gradescope import results
    r = results(_report())
    graded = [t for t in r["tests"] if t["max_score"] > 0]
    assert [t["name"] for t in graded] == ["softmax", "masked_softmax", "causal_mask"]
    assert [t["max_score"] for t in graded] == [5.0, 7.0, 4.0]
    assert [t["score"] for t in graded] == [3.33, 7.0, 0.0]
    assert r["score"] == sum(t["score"] for t in r["tests"]) == 10.33
    assert "✘ huge logits" in graded[0]["output"] and "no max subtraction" in graded[0]["output"]


def test_hidden_case_values_only_after_publication_and_never_the_seed():
    from autograder.classroom.write.gradescope import results
    r = results(_report())
    visible = [t for t in r["tests"] if t["visibility"] == "visible"]
    assert all("[0.5, 0.5]" not in t["output"] for t in visible) and "[0.5, 0.5]" not in r["output"]
    (details,) = [t for t in r["tests"] if t["visibility"] == "after_published"]
    assert details["name"] == "softmax: details of the failing cases" and details["max_score"] == 0
    assert "[0.5, 0.5]" in details["output"]
    assert "987654321" not in json.dumps(r) and r["stdout_visibility"] == "hidden"
