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

import ctypes
import json
import os
import pwd
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.isolation import budget, confine, confinement

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).resolve().parent / "adversarial"
LEARNER_USER = "mha-confine-test"  # as tests/test_confinement.py's
GRADER_USER = "mha-budget-grader"  # an instructor without root
EXERCISES = ["softmax", "causal_mask"]
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
    monkeypatch.setattr(budget, "_may_make_group", lambda parent: True)
    monkeypatch.setattr(budget, "namespaces", lambda: ns)
    monkeypatch.setattr(os, "geteuid", lambda: 0 if root else 1000)
    plan = budget.plan(run_as)
    assert plan["tasks"] == tasks and plan["scratch"] == ("tmpfs" if ns else "file")
    status = confine.status(run_as=run_as)
    assert status["bounded"] is bounded and bool(status["unbounded"]) is not bounded, status
    assert any(f"{budget.SCRATCH_MB} MB scratch" in layer for layer in status["layers"]) is bool(ns)
    if not bounded:
        assert "--run-as" in status["unbounded"]


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
    budget.remove_tree(str(where))


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
        assert budget.remove_tree(str(top)) and not top.exists()
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
            code = 0 if failed and budget.remove_tree(str(top)) and not top.exists() else 3
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


# ------------------------------------------------------------------ the attacks

def _user(name: str) -> tuple[int, int]:
    if shutil.which("useradd") is None:
        pytest.skip("needs useradd")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
        entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def _submission(dest: Path, hostile: str | None = None, **subst) -> None:
    shutil.copytree(ROOT / "solutions", dest, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    if hostile:
        code = (HOSTILE / f"{hostile}.py").read_text()
        for key, value in subst.items():
            code = code.replace(key, str(value))
        with open(dest / "attention.py", "a") as f:
            f.write("\n\n" + code)


def _blocked_ancestor(path: str) -> str | None:
    """The highest directory above ``path`` that other users may not enter (``/root``)."""
    blocked = None
    for parent in Path(path).parents:
        if parent != Path("/") and not os.stat(parent).st_mode & stat.S_IXOTH:
            blocked = str(parent)
    return blocked


def _as_ordinary_user(uid: int, gid: int, tasks: int, hold: Path):
    """For subprocess: the command runs as ``uid``, its user's process cap ``tasks``. An
    interpreter installed where only root may enter (pyenv's, under /root) is made reachable in
    a mount namespace of the command's own: a tmpfs over that directory, holding the
    installation alone (bind-mounted through ``hold``, an empty directory), so that nothing
    else of it becomes readable."""
    install = os.path.realpath(sys.base_prefix)
    blocked = _blocked_ancestor(install)
    libc = ctypes.CDLL(None, use_errno=True)
    ms_bind, ms_move, ms_rec, ms_private = 4096, 8192, 1 << 14, 1 << 18

    def enter():
        if blocked:
            steps = [(None, b"/", None, ms_rec | ms_private), (install.encode(), bytes(hold), None, ms_bind | ms_rec),
                     (b"tmpfs", blocked.encode(), b"tmpfs", 0)]
            if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
                os._exit(90)
            for n, (source, target, fstype, flags) in enumerate(steps):
                if libc.mount(source, target, fstype, flags, b"mode=0755" if fstype else None) != 0:
                    os._exit(91 + n)
            os.makedirs(install)
            if libc.mount(bytes(hold), install.encode(), None, ms_move, None) != 0:
                os._exit(94)
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return enter


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
    klass, out, tmp = shared_dir / "class", shared_dir / "out", shared_dir / "tmp"
    for i in range(HONEST):
        _submission(klass / f"honest{i}")
    # Graded first ("a" < "h"), holding its threads while its classmates are graded beside it.
    _submission(klass / "abomb", "thread_bomb", THREADS=3000, HOLD=1)
    _submission(klass / "zfill", "fill_scratch", TOTAL_MB=4 * budget.SCRATCH_MB)
    tmp.mkdir()
    hold = shared_dir / "interpreter"
    hold.mkdir()
    for path in [shared_dir, *shared_dir.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    env = {k: v for k, v in os.environ.items() if k != "MHA_GRADE_USER"}
    env.update(OMP_NUM_THREADS="1", TMPDIR=str(tmp), HOME=str(shared_dir))
    if mode["run_as"]:
        env["MHA_GRADE_USER"] = mode["run_as"]
    cmd = [sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(out), "--jobs", "2", "--quiet",
           *sum((["--exercise", e] for e in EXERCISES), [])]
    proc = subprocess.run(cmd, cwd=shared_dir, env=env, capture_output=True, text=True, timeout=600,
                          preexec_fn=_as_ordinary_user(*mode["user"], GRADER_TASKS, hold) if mode["user"] else None)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = {p.stem: json.loads(p.read_text()) for p in (out / "reports").glob("*.json")}
    assert len(reports) == HONEST + 2
    for i in range(HONEST):  # every honest learner: full marks, whatever its classmates did
        r = reports[f"honest{i}"]
        assert r["score"] == r["max_score"] == 9 and not r.get("error"), r.get("error") or r["exercises"]
    # The bomb: its softmax row says how many threads it got (fewer than the cap) and that more were refused.
    bomb = {e["id"]: e for e in reports["abomb"]["exercises"]}
    said = bomb["softmax"]["cases"][0]["feedback"]
    threads = int(re.search(r"OUTCOME threads=(\d+) refused", said).group(1))
    cap = budget.TASKS if "per child" in confine.bounded(bool(mode["run_as"]))[1] else budget.LEARNER_USER_TASKS
    assert threads < cap, said
    assert bomb["softmax"]["score"] == 0 and bomb["causal_mask"]["score"] == bomb["causal_mask"]["max_score"]
    # The filler: no more than its scratch's size, refused past it.
    filled = reports["zfill"]["exercises"][0]["cases"][0]["feedback"]
    written = int(re.search(r"OUTCOME wrote=(\d+) refused \(OSError: No space left on device\)", filled).group(1))
    assert written <= budget.SCRATCH_MB * 2**20, filled
    # Nothing left in the temporary folder; nothing of the grader's in what learners get.
    assert list(tmp.iterdir()) == []
    for path in (out / "feedback").iterdir():
        text = path.read_text()
        assert "Traceback" not in text and str(ROOT) not in text and "mha-grade" not in text, path
