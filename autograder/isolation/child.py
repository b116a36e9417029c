"""A child of the zygote: confined before any learner code exists in it, then exercises.

The order matters. Its own thread cap, memory group and scratch (``budget.py``: a pids group,
a memory group, a user or mount namespace with a tmpfs on the scratch directory) come first, while it still has the
grader's credentials; then silence, limits, the scratch as working directory and an import
path with no grader module; then the Landlock rules are built while the child still has the
grader's credentials (it must open the paths it may read); then the learner user (as
root), death with the zygote, and the kernel layers (``confine.enforce``). Only then does
the first job's learner code run. A failure anywhere there exits the child: the grader
reports the exercise as a crash, and no learner code ever runs less confined than reported.
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile

from . import budget, cases, confine, protocol
from .package import PACKAGE, Blocker, blocked
from .pristine import Pristine

_str = str  # learner code may patch builtins


def run(sock, drivers, namespaces: list, policy: confine.Policy, zygote: int) -> None:
    """Run exercises, one job at a time, until the grader closes the socket or the learner's
    code has left the process changed; never returns (os._exit), whatever that code does."""
    code = 0
    try:
        os.setpgid(0, 0)
        job = cases.next_job(sock)
        settle(job, policy, zygote)
        pristine = Pristine(namespaces)
        while True:
            begin_exercise(job)
            if not cases.run(sock, job, drivers, pristine):
                break
            try:
                job = cases.next_job(sock)
            except protocol.Closed:
                break
    except BaseException:  # noqa: BLE001  the grader sees the missing results as a crash
        code = 70
    finally:
        os._exit(code)


def settle(job: dict, policy: confine.Policy, zygote: int) -> None:
    """Every layer of confinement, before the learner's code exists in here."""
    workdir = job["workdir"]
    plan = policy.budget
    policy.groups.enter()  # first: a user namespace would leave it no right to the group's files
    policy.memory.enter(job["memory_mb"])  # every page it will own counted, files in memory too
    budget.oom_first()  # whichever OOM killer runs, it takes this child before the grader
    if plan["namespace"]:  # before the chdir: the working directory must be the tmpfs
        budget.enter_namespace(plan["namespace"], workdir, os.getuid(), os.getgid())
    if plan["tasks"] == "userns":  # counted in this child's own user namespace: its tasks only
        cap(resource.RLIMIT_NPROC, budget.TASKS)
    elif plan["tasks"] == "shared":  # counted per uid, with the grader's: what there is now, plus a few
        cap(resource.RLIMIT_NPROC, budget.user_tasks(os.getuid()) + budget.TASKS)
    os.chdir(workdir)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # anything the learner prints goes nowhere: results use the socket
        os.dup2(devnull, fd)
    os.close(devnull)
    cap(resource.RLIMIT_FSIZE, budget.SCRATCH_MB * 2**20)
    cap(resource.RLIMIT_NOFILE, budget.FILES)  # a pipe's buffer is kernel memory no other limit counts
    limit(resource.RLIMIT_CORE, 0)
    # Each exercise sets its memory limit as a soft one (a reused child's next exercise may
    # need it higher), which the learner's code may raise up to the hard one: that ceiling is
    # fixed now, at twice an exercise's allowance above what the child maps before any of it.
    ceiling = _address_space() + budget.MEMORY_CEILING * job["memory_mb"] * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or ceiling < hard:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling if soft == resource.RLIM_INFINITY else min(soft, ceiling),
                                                ceiling))
    # The import path: no repository root, no current directory, and a blocker in front of
    # every finder (the editable install's finder would otherwise find `solutions`).
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != root]
    for name in list(sys.modules):
        if blocked(name) or name == PACKAGE or name.startswith(PACKAGE + "."):
            del sys.modules[name]
    sys.meta_path.insert(0, Blocker())
    rules = confine.ruleset(policy, workdir)
    drop_privileges(workdir)
    confine.die_with_parent(zygote)
    confine.enforce(rules, policy)


def begin_exercise(job: dict) -> None:
    """Each exercise an empty scratch directory, memory and CPU limits, and a package
    ``mha_exercises`` that has not run yet (its modules run again, with this job's proxies)."""
    here = job["workdir"]
    # The previous exercise's files go; the directory stays (a directory per exercise cost
    # its removal, several milliseconds each on a disk mounted with discard).
    for entry in os.scandir(here):
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:  # the learner's own leftover, for the learner's next exercise to see
            pass
    os.chdir(here)
    tempfile.tempdir = here
    limit(resource.RLIMIT_AS, _address_space() + job["memory_mb"] * 2**20)
    usage = resource.getrusage(resource.RUSAGE_SELF)  # the CPU limit counts the whole process
    limit(resource.RLIMIT_CPU, int(usage.ru_utime + usage.ru_stime + job["cpu_seconds"]) + 1)
    for name in list(sys.modules):
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            del sys.modules[name]


def drop_privileges(workdir: str) -> None:
    """As root (Gradescope), become the unprivileged learner user (``sandbox.learner_ids``):
    the learner's code then cannot read the solutions or the grader's files even where the
    kernel has no Landlock. Its scratch directory becomes its own; the directory above it
    only lets it through."""
    ids = os.environ.pop("MHA_GRADE_RUN_AS", None)
    if not ids or os.geteuid() != 0:
        return
    uid, gid = (int(x) for x in ids.split(":"))
    os.chown(workdir, uid, gid)
    os.chmod(os.path.dirname(workdir), 0o711)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:  # never run learner code still privileged
        raise PermissionError("could not drop to the learner user")
    # A user of its own: a process cap now counts only the learners' tasks (a thread bomb).
    cap(resource.RLIMIT_NPROC, budget.LEARNER_USER_TASKS)


def cap(which: int, value: int) -> None:
    """A limit for the child's whole life: the hard one too, which the learner's code cannot raise."""
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, hard))
    except (ValueError, OSError):
        pass


def _address_space() -> int:
    """Bytes of virtual memory in use now (torch alone maps a few GB it never touches)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
