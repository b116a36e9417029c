"""A batch killed with SIGKILL leaves no process behind, and its rerun gives the grades of an
uninterrupted run.

The batch runs under a small launcher that makes itself a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``): every process the batch started, however deep, that outlives it
is re-parented to the launcher instead of to init, so the launcher can list exactly what was
left behind (and then clean it up, so a failing test leaks nothing either).
"""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAUNCHER = r'''
import ctypes, json, os, signal, subprocess, sys, time
from pathlib import Path
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
out, when, argv = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
batch = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 120
def reports():
    return len(list((out / "reports").glob("*.json"))) if (out / "reports").exists() else 0
while batch.poll() is None and time.monotonic() < deadline:
    if when.startswith("reports:") and reports() >= int(when.split(":")[1]):
        break
    if when.startswith("seconds:") and time.monotonic() > deadline - 120 + float(when.split(":")[1]):
        break
    time.sleep(0.02)
finished = batch.poll() is not None
os.kill(batch.pid, signal.SIGKILL)
batch.wait()
def descendants():
    pids = []
    for task in os.listdir("/proc/self/task"):
        text = Path(f"/proc/self/task/{task}/children").read_text().split()
        pids += [int(p) for p in text]
    return pids
left = []
for _ in range(50):  # up to 5 s for the dead batch's processes to notice and exit
    left = []
    for pid in descendants():
        try:
            os.waitpid(pid, os.WNOHANG)
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0]
            if state != "Z":
                left.append((pid, Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]))
        except (ChildProcessError, FileNotFoundError, ProcessLookupError):
            pass
    if not left:
        break
    time.sleep(0.1)
for pid, _ in left:  # clean up, so that a failing test leaks nothing
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
print(json.dumps({"left": left, "finished_before_kill": finished}))
'''


def _class(root: Path) -> Path:
    """Four learners: correct, the stubs, a classic bug, a hang."""
    shutil.copytree(ROOT / "solutions", root / "ada")
    shutil.copytree(ROOT / "mha_exercises", root / "bob")
    shutil.copytree(ROOT / "solutions", root / "cy")
    (root / "cy" / "attention.py").write_text((root / "cy" / "attention.py").read_text().replace(
        "e = np.exp(x - x.max(axis=axis, keepdims=True))", "e = np.exp(x)"))
    shutil.copytree(ROOT / "solutions", root / "dee")
    (root / "dee" / "heads.py").write_text("def split_heads(x, num_heads):\n    while True:\n        pass\n")
    return root


def _batch_argv(root: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "autograder", "batch", str(root), "--out", str(out), "--jobs", "2",
            "--seed", "11", "--exercise", "softmax", "--exercise", "split_heads", "--time-limit", "2", "--quiet"]


def _grades(out: Path) -> dict:
    with open(out / "grades.csv") as f:
        return {row["learner"]: {k: v for k, v in row.items() if k != "submitted_at"} for row in csv.DictReader(f)}


LEARNER_SIDE = "autograder.isolation.worker"  # the zygote and the learner's children


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A class graded once cleanly, and once killed at two points then rerun to the end."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_CHILD_SUBREAPER is Linux's")
    tmp = tmp_path_factory.mktemp("kill")
    root = _class(tmp / "class")
    clean = tmp / "clean"
    from autograder.classroom import batch  # in this process: one torch import fewer
    assert batch.main(_batch_argv(root, clean)[4:]) == 0
    out, left = tmp / "out", {}
    for when in ("reports:1", "reports:3"):  # the first grade written, most grades written
        proc = subprocess.run([sys.executable, "-c", LAUNCHER, str(out), when, *_batch_argv(root, out)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        left[when] = json.loads(proc.stdout.strip().splitlines()[-1])["left"]
    rerun = subprocess.run(_batch_argv(root, out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    return {"clean": clean, "out": out, "left": left, "rerun": rerun}


def test_killed_batch_leaves_no_grader_and_its_rerun_grades_as_an_uninterrupted_run(killed):
    for when, left in killed["left"].items():
        graders = [cmd for _, cmd in left if LEARNER_SIDE not in cmd]
        assert graders == [], when
    assert killed["rerun"].returncode == 0, killed["rerun"].stderr
    assert _grades(killed["out"]) == _grades(killed["clean"])
    assert not list(killed["out"].rglob(".*.tmp"))


def test_killed_batch_leaves_no_learner_side_process(killed):
    for when, left in killed["left"].items():
        assert [cmd for _, cmd in left if LEARNER_SIDE in cmd] == [], when
