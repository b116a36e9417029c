"""Kernel confinement of the learner's process: what its code may read, write and reach.

Each child of the zygote confines itself before any learner code exists in it, in layers,
each stopping what the others do not:

* **Landlock** (Linux >= 5.13, through the ``landlockpy`` binding; every right the running
  kernel's ABI knows is handled, so an older kernel loses rules one by one, never all):
  reading only the Python installation and the libraries already mapped, the learner-side
  part of the grader (``autograder/isolation``, ``spec.py``) and the process's own ``/proc``
  entry; writing only its scratch directory (and ``/dev/null``). Not readable, then: the
  solutions, the checks, the seed, other submissions, the output folder, the home directory
  (but a Python installed there), ``/tmp``, other processes' ``/proc`` entries. No execve. No TCP bind or connect (ABI 4),
  no signal to a process outside the child's own domain, no abstract Unix socket outside it
  (ABI 6). Ptrace of any process outside it is refused by Landlock itself.
* **seccomp** (``seccomp.py``): no new socket of any family (UDP, raw, Unix: Landlock does
  not cover them all), no new process, no execve, no ptrace, no namespace or mount.
* **credentials**: ``no_new_privs``; as root, the unprivileged learner user when one is
  given (``--run-as``, ``MHA_GRADE_USER``) or else no capabilities at all; the rlimits and
  the user's process cap stay (``child.py``).
* **budget** (``budget.py``): a cap on the child's threads that is its own (a pids cgroup, or
  a user namespace of its own; as root with ``--run-as``, the learner user's process cap),
  and a size-limited tmpfs scratch in a mount namespace of its own, where the kernel allows.
* **lifetime**: the zygote and every child get SIGKILL when their parent dies
  (``PR_SET_PDEATHSIG``), and see EOF on their socket.

:func:`confinement` says, in the grader, whether this machine confines the learner's code
and if not why (another OS, no Landlock, an old ABI); reports carry :func:`status`. A child
whose kernel offered a layer that then fails to apply exits before running any learner code
(the exercise is reported as a crash): it never runs less confined than reported.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import sysconfig

import autograder

from . import budget, seccomp

_PR_SET_PDEATHSIG = 1
_CAPSET = {"x86_64": 126, "aarch64": 91}
_LEARNER_FILES = ("__init__.py", "spec.py", "isolation")  # of the autograder package


def landlock_abi() -> tuple[int, str]:
    """The kernel's Landlock ABI version (0: none), and why there is none."""
    if not sys.platform.startswith("linux"):
        return 0, f"Landlock is a Linux feature; this is {sys.platform}"
    try:
        import landlockpy
    except ImportError:
        return 0, "the landlockpy package is not installed (pip install -r requirements.txt)"
    try:
        abi = landlockpy.abi_version()
    except OSError as err:
        return 0, f"Landlock is unusable here ({err})"
    return abi, "" if abi else "this kernel has no Landlock (Linux >= 5.13 with landlock in its LSM list)"


def status(run_as: bool = False) -> dict:
    """What confines the learner's code on this machine, for the report: ``confined``,
    ``layers`` (what applies) and ``why`` (what is missing, empty when nothing is); and
    ``bounded``/``unbounded`` for what one learner's threads may cost everyone else
    (``budget.py``): whether they have a cap of their own, and if not why."""
    abi, why_not = landlock_abi()
    filtered, why_no_filter = seccomp.available()
    layers, missing = [], []
    if abi:
        layers.append(f"Landlock ABI {abi} (files" + (", TCP" if abi >= 4 else "")
                      + (", signals" if abi >= 6 else "") + ")")
    else:
        missing.append(why_not)
    if filtered:
        layers.append("seccomp (no sockets, processes or exec)")
    else:
        missing.append(why_no_filter)
    if run_as:
        layers.append("unprivileged learner user")
    if abi and abi < 4 and not filtered:
        missing.append(f"Landlock ABI {abi} has no network rules and no seccomp filter replaces them")
    if abi and abi < 6 and not run_as:
        missing.append(f"Landlock ABI {abi} cannot stop signals to the grader (ABI 6 can; or use --run-as as root)")
    confined = bool(abi) and not missing
    capped, uncapped = budget.describe(budget.plan(run_as))
    return {"confined": confined, "layers": layers + capped, "why": "; ".join(missing),
            "bounded": not uncapped, "unbounded": "; ".join(uncapped)}


def confinement(run_as: bool = False) -> tuple[bool, str]:
    """``(confined, why)``: whether the kernel confines the learner's code here (file system,
    network, signals), and what is missing when it does not. Batch grading refuses to run
    unconfined unless told so."""
    s = status(run_as)
    return s["confined"], s["why"] or "confined: " + ", ".join(s["layers"])


def bounded(run_as: bool = False) -> tuple[bool, str]:
    """``(bounded, why)``: whether one learner's threads have a cap of their own here (not the
    grader's user's), and what is missing when they do not. Batch grading refuses to run
    unbounded unless told so."""
    s = status(run_as)
    return s["bounded"], s["unbounded"] or ", ".join(s["layers"])


# ------------------------------------------------------------------ the rules (zygote)

class Policy:
    """The paths every child may read, found once in the zygote (the children only open them)."""

    def __init__(self):
        self.abi = landlock_abi()[0]
        self.filter = seccomp.available()[0]
        self.reads = [(p, os.path.isdir(p)) for p in _readable()] if self.abi else []
        # How each child's threads and scratch are capped (budget.py), and the zygote's pids group.
        self.budget = budget.plan(run_as=bool(os.environ.get("MHA_GRADE_RUN_AS")))
        self.groups = budget.Groups(self.budget["group"] if self.budget["tasks"] == "cgroup" else None)
        # Each child's memory group (budget.py), where the kernel offers one; else memfd_create is refused.
        self.memory = budget.MemoryGroups(self.budget["memory_group"], self.groups)
        self.memfd = self.memory.base is not None
        if self.filter:
            seccomp.prepare(memfd=self.memfd)


def _readable() -> list[str]:
    """The Python installation, the directories of every file mapped now (the shared
    libraries of Python, NumPy and torch), the learner-side files of the grader; never a
    directory holding a secret (the checkout, the solutions, the grader's other modules)."""
    package = os.path.dirname(os.path.realpath(autograder.__file__))
    secrets = {package}
    above = os.path.dirname(package)
    if os.path.basename(above) not in ("site-packages", "dist-packages"):
        secrets.add(above)  # a checkout, or Gradescope's source folder (the seed is there)
    try:
        spec = importlib.util.find_spec("solutions")
        for where in (spec.submodule_search_locations or []) if spec else []:
            secrets.add(os.path.realpath(where))
    except (ImportError, ValueError):
        pass
    candidates = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    # Of the import path, only the installation's own entries: the current directory (where
    # ``python -m`` was run: the class folder, perhaps) or a PYTHONPATH entry is nobody's to read.
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    candidates |= {p for p in sys.path if p and (os.path.basename(p) in ("site-packages", "dist-packages") or any(
        os.path.realpath(p).startswith(prefix + os.sep) for prefix in prefixes))}
    candidates |= _mapped_directories()
    allowed: set[str] = set()
    for path in candidates:
        _allow(os.path.realpath(path), secrets, allowed)
    allowed |= {os.path.join(package, name) for name in _LEARNER_FILES}
    allowed |= {"/sys/devices/system/cpu", "/proc/cpuinfo", "/dev/urandom"}  # torch's cpuinfo reads them
    allowed = {p for p in allowed if os.path.exists(p)}
    # A directory covers its subtree: the fewer rules, the cheaper each child's.
    return sorted(p for p in allowed if not any(p.startswith(q + os.sep) for q in allowed))


def _allow(path: str, secrets: set, allowed: set) -> None:
    if not os.path.isdir(path) or path in secrets:
        return
    if not any(s == path or s.startswith(path.rstrip(os.sep) + os.sep) for s in secrets):
        allowed.add(path)
        return
    for entry in os.listdir(path):  # holds a secret: its other entries one by one
        full = os.path.join(path, entry)
        if os.path.isdir(full):
            _allow(full, secrets, allowed)
        elif full not in secrets:
            allowed.add(full)


def _mapped_directories() -> set[str]:
    """Where the files mapped into this process are (shared libraries), but never a temporary
    directory (where the scratch directories of other runs are)."""
    import tempfile  # deferred: only the zygote needs it; mha-grade's start-up imports this module

    temporary = tuple(os.path.realpath(t) for t in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"))
    out = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if path.startswith("/") and not path.endswith("(deleted)") and not path.startswith("/dev/"):
                    where = os.path.dirname(os.path.realpath(path))
                    if not any(where == t or where.startswith(t + os.sep) for t in temporary):
                        out.add(where)
    except OSError:
        pass
    return out


# ------------------------------------------------------------------ applying (a child)

def ruleset(policy: Policy, workdir: str):
    """The Landlock ruleset of a child writing ``workdir``, built (paths opened) while the
    child still has the grader's credentials; None when the kernel has no Landlock."""
    if not policy.abi:
        return None
    from landlockpy import AccessFS, Ruleset, Scope

    read = AccessFS.READ_FILE | AccessFS.READ_DIR
    write = (read | AccessFS.WRITE_FILE | AccessFS.REMOVE_DIR | AccessFS.REMOVE_FILE | AccessFS.MAKE_DIR
             | AccessFS.MAKE_REG | AccessFS.MAKE_SYM | AccessFS.REFER | AccessFS.TRUNCATE)
    # Every right the kernel knows is handled (denied unless granted): files, TCP, scopes.
    rules = Ruleset(scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL)
    try:
        for path, is_dir in policy.reads:
            try:
                rules.allow_path(path, read if is_dir else AccessFS.READ_FILE)  # a file takes file rights only
            except FileNotFoundError:  # gone since the zygote looked: one thing fewer to read
                continue
        rules.allow_path(f"/proc/{os.getpid()}", read)  # its own entry only: never the grader's
        rules.allow_path("/dev/null", AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.TRUNCATE | AccessFS.IOCTL_DEV)
        rules.allow_path(workdir, write)
    except BaseException:
        rules.close()
        raise
    return rules


def enforce(rules, policy: Policy) -> None:
    """Apply every layer the kernel offers to this process (single-threaded: a fresh fork).
    Raises if one fails: the caller then exits without running learner code. Elsewhere than
    Linux there is nothing to apply (and the report says so)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if rules is not None:
        try:
            rules.restrict()
        finally:
            rules.close()
    if policy.filter:
        seccomp.install(memfd=policy.memfd)
    if os.geteuid() == 0 or policy.budget["tasks"] == "userns" or policy.budget["namespace"] == "user":
        _drop_capabilities(libc)  # root's, or those a user namespace of its own gave


def _drop_capabilities(libc) -> None:
    """Root with no learner user: uid 0 stays, but with no capability left (no DAC override,
    no kill of others, no raw sockets, no module loading)."""
    number = _CAPSET.get(seccomp.machine())
    if number is None:
        raise OSError("no capset number for this architecture")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all empty
    if libc.syscall(number, header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies, however it dies; exit now if it already
    has. Set after any change of user (which clears it)."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
    if os.getppid() != parent:  # died before the line above: nobody would signal us
        os._exit(0)
