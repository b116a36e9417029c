"""Running the grader as other users, from outside, and the submissions its attack tests grade
(``tests/test_learner_budget.py``, ``bench/learner_budget.py``)."""
from __future__ import annotations

import ctypes
import os
import pwd
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).resolve().parent / "adversarial"


def system_user(name: str) -> tuple[int, int]:
    """(uid, gid) of the system user ``name``, added if missing (root, useradd)."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
        entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def submission(dest: Path, hostile: str | None = None, **subst) -> None:
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


def as_ordinary_user(uid: int, gid: int, tasks: int, hold: Path):
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


EXERCISES = ["softmax", "causal_mask"]  # the hostile softmax and an honest exercise


def run_class(where: Path, honest: int, threads: int, hold: float, total_mb: int, *, user=None, tasks: int = 0,
              run_as: str | None = None, checkout: str | None = None, time_limit: float | None = None,
              timeout: float = 900) -> dict:
    """``mha-grade batch`` on ``honest`` copies of the solutions, a thread bomb (``threads``
    held ``hold`` s, graded first) and a scratch filler (``total_mb``), in ``where`` (which
    every user may use): as ``user`` ((uid, gid), its process cap ``tasks``) or as this
    process's user, with ``run_as`` as the learner user, the grader of ``checkout`` if given.
    Returns what an instructor would look at: the exit status, stderr, the reports, what
    the bomb and the filler say they got, what is left in the temporary folder, the wall time.
    ``time_limit``: seconds per exercise (``--time-limit``), to let the bomb hold longer."""
    import json
    import re
    import time

    klass, out, tmp, hold_dir = where / "class", where / "out", where / "tmp", where / "interpreter"
    for i in range(honest):
        submission(klass / f"honest{i:02d}")
    submission(klass / "abomb", "thread_bomb", THREADS=threads, HOLD=hold)  # "a" < "h": graded first
    submission(klass / "zfill", "fill_scratch", TOTAL_MB=total_mb)
    tmp.mkdir()
    hold_dir.mkdir()
    for path in [where, *where.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_GRADE_USER", "PYTHONPATH")}
    env.update(OMP_NUM_THREADS="1", TMPDIR=str(tmp), HOME=str(where))
    if checkout:
        env["PYTHONPATH"] = checkout
    if run_as:
        env["MHA_GRADE_USER"] = run_as
    cmd = [sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(out), "--jobs", "2", "--quiet",
           *sum((["--exercise", e] for e in EXERCISES), []), *(["--time-limit", str(time_limit)] if time_limit else [])]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=checkout or where, env=env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=as_ordinary_user(*user, tasks, hold_dir) if user else None)
    wall = time.perf_counter() - start
    reports = {p.stem: json.loads(p.read_text()) for p in (out / "reports").glob("*.json")} if out.exists() else {}

    def said(learner: str, pattern: str) -> str | None:
        report = reports.get(learner, {})
        text = " ".join(c.get("feedback", "") for e in report.get("exercises", []) for c in e.get("cases", []))
        found = re.search(pattern, text)
        return found.group(1) if found else None

    left = [p for p in tmp.rglob("*")] if tmp.exists() else []
    feedback = list((out / "feedback").iterdir()) if (out / "feedback").exists() else []
    return {
        "returncode": proc.returncode, "stderr": proc.stderr, "reports": reports, "wall": wall,
        "honest": sum(1 for k, r in reports.items() if k.startswith("honest")),
        "honest_full": sum(1 for k, r in reports.items() if k.startswith("honest") and r["score"] == r["max_score"]),
        "threads": said("abomb", r"OUTCOME threads=(\d+)"), "bomb_said": said("abomb", r"(OUTCOME threads=[^(]*)"),
        "written": said("zfill", r"OUTCOME wrote=(\d+)"), "fill_said": said("zfill", r"(OUTCOME wrote=[^(]*\([^)]*\))"),
        "left_entries": len([p for p in tmp.iterdir()]) if tmp.exists() else 0,
        "left_bytes": sum(p.stat().st_size for p in left if p.is_file() and not p.is_symlink()),
        "leaky_feedback": [p.name for p in feedback if "Traceback" in p.read_text(errors="replace")
                           or str(ROOT) in p.read_text(errors="replace")],
    }
