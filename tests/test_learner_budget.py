"""One learner costs only that learner: its threads and its scratch bytes are capped per child,
whoever runs the grader (``autograder/isolation/budget.py``).

The attacks run as an instructor runs a batch (``python -m autograder batch``), from outside:
a class of honest learners (copies of the solutions), one learner whose softmax starts
thousands of threads and holds them, and one whose module fills its scratch directory and
makes it read-only. As root (with and without a learner user) and, where this machine lets
root start a command as another user, as an ordinary user whose own process cap is small
(as on a shared teaching server): every honest learner gets full marks, the hostile rows say
what was refused, nothing is left in the temporary folder, and the grader ends by itself.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from budget_attack import run_class, system_user

from autograder.isolation import budget, confine, confinement
from autograder.isolation.cleanup import remove_tree

LEARNER_USER = "mha-confine-test"  # as tests/test_confinement.py's
GRADER_USER = "mha-budget-grader"  # an instructor without root
HONEST = 4
GRADER_TASKS = 300  # the ordinary user's process cap: the grader's tree needs a few dozen

pytestmark = pytest.mark.skipif(not confinement()[0], reason=f"not confined here: {confinement()[1]}")


# ------------------------------------------------------------------ what each mode says

@pytest.mark.parametrize("root, run_as, group, ns, tasks, bounded", [
    (True, False, "/sys/fs/cgroup/pids", "mount", "cgroup", True),
    (True, True, None, "mount", "user", True),
    (True, False, None, "", "none", False),  # the kernel exempts uid 0 from the process cap
    (False, False, None, "user", "userns", True),
    (False, False, None, "", "shared", False),  # the grader's own uid's count: not the learner's own
])
def test_each_mode_says_what_caps_the_learners_threads(monkeypatch, root, run_as, group, ns, tasks, bounded):
    monkeypatch.setattr(budget, "pids_directory", lambda: group)
    monkeypatch.setattr(budget, "_may_make_group", lambda parent, controller="pids": True)
    monkeypatch.setattr(budget, "memory_directory", lambda: None)
    monkeypatch.setattr(budget, "namespaces", lambda: ns)
    monkeypatch.setattr(os, "geteuid", lambda: 0 if root else 1000)
    plan = budget.plan(run_as)
    assert plan["tasks"] == tasks and plan["scratch"] == ("tmpfs" if ns else "file")
    status = confine.status(run_as=run_as)
    assert status["bounded"] is bounded and bool(status["unbounded"]) is not bounded, status
    assert any(f"{budget.SCRATCH_MB} MB scratch" in layer for layer in status["layers"]) is bool(ns)
    if not bounded:
        assert "--run-as" in status["unbounded"]


def test_elsewhere_than_linux_nothing_is_claimed(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert budget.plan(False)["tasks"] == "none"
    layers, missing = budget.describe(budget.plan(False))
    assert layers == [] and "darwin" in missing[0]


def test_this_machine_caps_the_threads(tmp_path):
    """Here (the course's test machine) the cap is the child's own."""
    capped, why = confine.bounded()
    assert capped, why
    assert "threads per child" in why or "for all learners" in why


def test_batch_refuses_to_run_unbounded_unless_told(tmp_path, monkeypatch, capsys):
    from autograder.classroom import batch

    (tmp_path / "class" / "ada").mkdir(parents=True)
    out = tmp_path / "out"
    monkeypatch.setattr(confine, "bounded", lambda run_as=False: (False, "nothing caps the learner's threads"))
    assert batch.main([str(tmp_path / "class"), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "nothing caps the learner's threads" in err and "--unconfined" in err and not out.exists()
    monkeypatch.setattr(batch, "run_batch", lambda *a, **k: batch.BatchResult())
    assert batch.main([str(tmp_path / "class"), "--out", str(out), "--quiet", "--unconfined"]) == 0


@pytest.fixture
def shared_dir():
    """A folder every user may use (the ordinary user's class, output and temporary folder)."""
    where = Path(tempfile.mkdtemp(prefix="mha-budget-test-", dir="/tmp"))
    where.chmod(0o777)
    yield where
    remove_tree(str(where))


def _user(name: str) -> tuple[int, int]:
    if shutil.which("useradd") is None:
        pytest.skip("needs useradd")
    return system_user(name)


# ------------------------------------------------------------------ the grader's cleanup

def _read_only_tree(top: Path) -> None:
    deep = top / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "f").write_bytes(b"x" * 1000)
    (top / "a" / "g").write_bytes(b"y")
    (top / "locked").mkdir()
    for d, mode in ((deep, 0o500), (top / "a", 0o500), (top / "locked", 0), (top, 0o500)):
        d.chmod(mode)


def test_a_scratch_made_read_only_is_removed_all_the_same(shared_dir):
    """As the learner's own user (the grader's, without --run-as): root would not notice."""
    top = shared_dir / "scratch"
    if os.geteuid() != 0:
        _read_only_tree(top)
        assert remove_tree(str(top)) and not top.exists()
        return
    uid = _user(GRADER_USER)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(uid[1])
            os.setuid(uid[0])
            _read_only_tree(top)
            failed = shutil.rmtree(str(top), ignore_errors=True) or top.exists()  # what was done before
            code = 0 if failed and remove_tree(str(top)) and not top.exists() else 3
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


# ------------------------------------------------------------------ the attacks

@pytest.fixture(params=["root", "root with a learner user", "ordinary user"])
def mode(request):
    if os.geteuid() != 0:  # an ordinary user already: only its own mode can run here
        if request.param != "ordinary user":
            pytest.skip("needs root")
        return {"user": None, "run_as": None}
    if request.param == "root":
        return {"user": None, "run_as": None}
    if request.param == "root with a learner user":
        _user(LEARNER_USER)
        return {"user": None, "run_as": LEARNER_USER}
    return {"user": _user(GRADER_USER), "run_as": None}


def test_a_thread_bomb_and_a_scratch_filler_cost_only_themselves(mode, shared_dir):
    # The bomb holds its threads while its classmates are graded beside it.
    got = run_class(shared_dir, HONEST, threads=3000, hold=1, total_mb=4 * budget.SCRATCH_MB,
                    user=mode["user"], tasks=GRADER_TASKS, run_as=mode["run_as"])
    assert got["returncode"] == 0, got["stderr"][-3000:]  # the grader ended by itself
    reports = got["reports"]
    assert len(reports) == HONEST + 2
    for i in range(HONEST):  # every honest learner: full marks, whatever its classmates did
        r = reports[f"honest{i:02d}"]
        assert r["score"] == r["max_score"] == 9 and not r.get("error"), r.get("error") or r["exercises"]
    # The bomb: its softmax row says how many threads it got (fewer than the cap) and that more were refused.
    bomb = {e["id"]: e for e in reports["abomb"]["exercises"]}
    cap = budget.TASKS if "per child" in confine.bounded(bool(mode["run_as"]))[1] else budget.LEARNER_USER_TASKS
    assert got["threads"] is not None and int(got["threads"]) < cap and "refused" in got["bomb_said"], got["bomb_said"]
    assert bomb["softmax"]["score"] == 0 and bomb["causal_mask"]["score"] == bomb["causal_mask"]["max_score"]
    # The filler: no more than its scratch's size, refused past it.
    assert int(got["written"]) <= budget.SCRATCH_MB * 2**20, got["fill_said"]
    assert "No space left on device" in got["fill_said"], got["fill_said"]
    # Nothing left in the temporary folder; nothing of the grader's in what learners get.
    assert got["left_entries"] == 0 and got["leaky_feedback"] == []


# ------------------------------------------------------------------ the grader's own failures

def test_a_grader_out_of_threads_is_tried_again_then_the_learner_is_told_plainly(tmp_path):
    import errno

    from autograder.classroom.grade import graders

    tried = tmp_path / "tried"
    tried.mkdir()
    secret = str(tmp_path / "instructor" / "solutions")

    def grade(path, exercises=None, seed=0):  # runs in a forked grader: its tries are counted in files
        name = Path(path).name
        (tried / f"{name}.{len(list(tried.glob(name + '.*')))}").touch()
        if name == "always" or not (tried / f"{name}.1").exists():  # "once": its first try only
            try:
                raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable", secret)
            except OSError as err:
                raise RuntimeError(f"could not start the learner's process under {secret}") from err
        return {"submission": name, "score": 1.0, "max_score": 1.0, "exercises": []}

    outcomes = {o.learner: o for o in graders.grade_all({"once": tmp_path / "once", "always": tmp_path / "always"},
                                                        2, grade=grade)}
    assert outcomes["once"].error is None and outcomes["once"].report["score"] == 1.0
    assert len(list(tried.glob("once.*"))) == 2
    assert len(list(tried.glob("always.*"))) == 1 + graders.RETRIES
    said = outcomes["always"].report["error"]
    assert said.startswith("the grading machine ran out of processes or threads (RuntimeError)"), said
    assert secret not in json.dumps(outcomes["always"].report) and "Traceback" not in json.dumps(outcomes["always"].report)
    assert secret in outcomes["always"].error  # the instructor's copy: the whole traceback


# ------------------------------------------------------------------ limits the learner may not raise

def test_the_learner_cannot_raise_its_own_limits_past_their_ceiling(shared_dir):
    import subprocess

    from budget_attack import submission

    submission(shared_dir / "sub", "raise_own_limits")
    report = shared_dir / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "MHA_GRADE_USER"}
    proc = subprocess.run([sys.executable, "-m", "autograder", str(shared_dir / "sub"), "--exercise", "softmax",
                           "--json", str(report), "--quiet"], env=dict(env, OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    said = json.loads(report.read_text())["exercises"][0]["cases"][0]["feedback"]
    assert "OUTCOME" in said, said
    # The CPU limit is the soft one it always was (each case's CPU is watched from outside).
    for capped in ("RLIMIT_AS=capped", "RLIMIT_FSIZE=capped", "memory:refused"):
        assert capped in said, said


def test_a_grader_killed_mid_submission_leaves_no_scratch_behind(tmp_path, monkeypatch):
    import tempfile
    import time

    from autograder.classroom.grade import graders

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def grade(path, exercises=None, seed=0):  # as the pipeline does, then a hang: killed at the timeout
        scratch = tempfile.mkdtemp(prefix="mha-grade-")
        os.makedirs(f"{scratch}/0/fill")
        with open(f"{scratch}/0/fill/data", "wb") as f:
            f.write(b"\0" * 2**20)
        os.chmod(f"{scratch}/0/fill", 0o500)
        time.sleep(60)

    outcomes = graders.grade_all({"hang": tmp_path / "hang"}, 1, grade=grade, timeout=2.0)
    assert "longer than 2 s" in outcomes[0].report["error"]
    assert list(tmp_path.iterdir()) == [] and tempfile.tempdir == str(tmp_path)


@pytest.mark.parametrize("memberships, mounts, controllers, found", [
    ("8:pids:/\n4:memory:/x\n0::/\n",  # v1 beside a v2 without pids (this machine)
     "1 0 0:1 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n2 0 0:2 / /sys/fs/cgroup/unified rw - cgroup2 c rw\n",
     "hugetlb", "/sys/fs/cgroup/pids"),
    ("8:pids:/docker/abc\n",  # v1 in a container: its group is the mount's root
     "1 0 0:1 /docker/abc /sys/fs/cgroup/pids ro - cgroup cgroup ro,pids\n", "", "/sys/fs/cgroup/pids"),
    ("0::/user.slice/u.service\n",  # v2 offering pids
     "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "cpu pids", "/sys/fs/cgroup/user.slice/u.service"),
    ("0::/user.slice/u.service\n", "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "cpu memory", None),
    ("0::/\n", "1 0 0:1 / /proc rw - proc proc rw\n", "pids", None),  # no cgroup file system at all
])
def test_the_pids_hierarchy_is_found_where_the_kernel_mounts_it(memberships, mounts, controllers, found):
    assert budget.find_pids_directory(memberships, mounts, lambda path: controllers) == found


def test_a_killed_batchs_temporary_folder_goes_with_the_next_batch(tmp_path, monkeypatch):
    import tempfile

    from autograder.classroom.grade import graders

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs: a batch killed with SIGKILL
    stale = tmp_path / f"mha-batch-{dead.pid}-x1y2z3"
    (stale / "mha-grade-abc" / "0").mkdir(parents=True)
    (stale / "mha-grade-abc" / "0").chmod(0o500)
    alive = tmp_path / f"mha-batch-{os.getpid()}-x1y2z3"  # a batch still running: left alone
    alive.mkdir()
    graders.grade_all({"ada": tmp_path / "ada"}, 1, grade=lambda path, exercises=None, seed=0: {"score": 1.0})
    assert sorted(p.name for p in tmp_path.iterdir()) == [alive.name]


# ------------------------------------------------------------------ memory no rlimit counts

def _memfd_submission(tmp_path: Path) -> Path:
    sub = tmp_path / "submission"
    shutil.copytree(Path(__file__).resolve().parents[1] / "solutions", sub,
                    ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    with open(sub / "attention.py", "a") as f:
        f.write("\n\n" + (Path(__file__).parent / "adversarial" / "fill_memfd.py").read_text())
    return sub


@pytest.mark.parametrize("mode", ["cgroup", "capped"])
def test_memory_in_files_is_counted_or_refused(tmp_path, monkeypatch, mode):
    """memfd pages, in no address space: with a memory cgroup per child the kernel's OOM killer
    ends the child at its exercise's allowance and the grader says so from the cgroup's count;
    without one (forced here), memfd_create is refused. Either way the other exercise passes."""
    import dataclasses

    from autograder.grading import runner
    from autograder.grading.exercises import EXERCISES
    from autograder.isolation import sandbox

    if mode == "cgroup" and budget.plan(False)["memory"] != "cgroup":
        pytest.skip("no memory cgroup may be made here")
    if mode == "capped":
        monkeypatch.setenv("MHA_GRADE_NO_MEMORY_CGROUP", "1")
    monkeypatch.setitem(EXERCISES, "softmax", dataclasses.replace(EXERCISES["softmax"], memory_mb=256))
    zygote = sandbox.Zygote(fork=False)
    try:
        report = runner.grade_submission(_memfd_submission(tmp_path), ["softmax", "scaled_dot_product_attention"],
                                         zygote=zygote, parallel=1)
    finally:
        zygote.close()
    results = {r.id: r for r in report.exercises}
    softmax, sdpa = results["softmax"], results["scaled_dot_product_attention"]
    assert softmax.score == 0 and (sdpa.status, sdpa.score) == ("passed", sdpa.max_score)
    said = softmax.cases[0].feedback
    if mode == "cgroup":
        assert softmax.status == "error" and said.startswith("ran out of memory: the kernel's OOM killer"), said
        assert "256 MB" in said
    else:
        assert softmax.status == "failed" and "PermissionError" in said, said


def _memory_group(limit_mb: int) -> str | None:
    """A memory cgroup of this test's own, under this process's, limited to ``limit_mb``."""
    parent = budget.memory_directory()
    if parent is None or not os.access(parent, os.W_OK):
        return None
    group = os.path.join(parent, f"mha-test-container-{os.getpid()}")
    try:
        os.mkdir(group)
        v2 = os.path.exists(os.path.join(group, "memory.max"))
        with open(os.path.join(group, "memory.max" if v2 else "memory.limit_in_bytes"), "w") as f:
            f.write(str(limit_mb * 2**20))
    except OSError:
        return None
    return group


def test_a_memfd_filler_in_a_768_mb_container_gets_a_complete_report(tmp_path):
    """As Gradescope's 768 MB container: ``mha-grade --gradescope`` in a memory cgroup of 768 MB
    (made here under this process's own, the learner's children nested in it), on a submission
    whose softmax fills memfd files without end. The grader survives and writes every test."""
    group = _memory_group(768)
    if group is None:
        pytest.skip("no memory cgroup may be made here")
    out = tmp_path / "results.json"
    try:
        def enter():
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        proc = subprocess.run([sys.executable, "-m", "autograder", str(_memfd_submission(tmp_path)), "-e", "softmax",
                               "-e", "scaled_dot_product_attention", "-e", "causal_mask", "--gradescope", str(out),
                               "--quiet"], preexec_fn=enter, capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        events = budget._read(os.path.join(group, "memory.events" if os.path.exists(
            os.path.join(group, "memory.events")) else "memory.oom_control"))
    finally:
        _remove_group(group)
    assert proc.returncode in (0, 1), proc.stderr
    results = json.loads(out.read_text())
    tests = {t["name"]: t for t in results["tests"] if t["visibility"] == "visible"}
    assert set(tests) == {"softmax", "scaled_dot_product_attention", "causal_mask"}
    assert tests["softmax"]["score"] == 0 and "memory" in tests["softmax"]["output"], tests["softmax"]["output"]
    assert tests["causal_mask"]["score"] == tests["causal_mask"]["max_score"], tests["causal_mask"]["output"]
    assert tests["scaled_dot_product_attention"]["score"] == tests["scaled_dot_product_attention"]["max_score"], tests["scaled_dot_product_attention"]["output"]
    assert events  # the group was the container's: its counts were there to read


def _remove_group(group: str) -> None:
    """The test's memory group, once the kernel has let its last process go (within 5 s)."""
    for _ in range(100):
        try:
            os.rmdir(group)
            return
        except OSError:
            time.sleep(0.05)


def test_a_batch_with_a_memfd_filler_in_768_mb_grades_every_honest_learner(tmp_path):
    """``mha-grade batch --jobs 2`` in a 768 MB memory cgroup (as above): three honest learners
    and one whose softmax fills memfd files. Every honest learner gets full marks, the filler's
    row is written, and the batch ends by itself."""
    group = _memory_group(768)
    if group is None:
        pytest.skip("no memory cgroup may be made here")
    klass, out = tmp_path / "class", tmp_path / "out"
    for i in range(3):
        shutil.copytree(Path(__file__).resolve().parents[1] / "solutions", klass / f"honest{i}",
                        ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    shutil.copytree(_memfd_submission(tmp_path), klass / "afill")  # "a" < "h": graded first

    def enter():
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    try:
        proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(out), "--jobs", "2",
                               "--quiet", "--exercise", "softmax", "--exercise", "causal_mask"], preexec_fn=enter,
                              capture_output=True, text=True, timeout=900, env=dict(os.environ, OMP_NUM_THREADS="1"))
    finally:
        _remove_group(group)
    assert proc.returncode == 0, proc.stderr
    reports = {p.stem: json.loads(p.read_text()) for p in (out / "reports").glob("*.json")}
    assert set(reports) == {"afill", "honest0", "honest1", "honest2"}, set(reports)
    for name in ("honest0", "honest1", "honest2"):
        assert reports[name]["score"] == reports[name]["max_score"], (name, reports[name]["score"])
    softmax = next(e for e in reports["afill"]["exercises"] if e["id"] == "softmax")
    assert softmax["score"] == 0 and softmax["status"] == "error", softmax["status"]
