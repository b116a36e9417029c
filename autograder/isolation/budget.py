"""What one learner's process may cost the machine: its threads and its scratch bytes, capped
per child whoever runs the grader.

**Threads and processes** (seccomp already refuses new processes; a thread is a task too):

* ``cgroup``: a pids control group per child, ``pids.max`` = :data:`TASKS`, where this process
  may create one (root with a writable cgroup file system; an ordinary user in a delegated
  cgroup v2 group with the pids controller). The cap is the child's alone, whatever its user.
* ``userns``: an ordinary user without such a group: each child enters a user namespace of
  its own (the same uid, mapped to itself), where ``RLIMIT_NPROC`` counts only that child's
  tasks (Linux >= 5.14 counts it per user namespace and uid), set to :data:`TASKS`.
* ``user``: root with ``--run-as`` and no group: the learner user's ``RLIMIT_NPROC`` (256)
  counts the tasks of every learner at once, never the grader's.
* ``shared``: an ordinary user with neither: ``RLIMIT_NPROC`` is counted per real uid, so a
  child's limit is set to its user's tasks when it starts plus :data:`TASKS`. The learners'
  threads still count against the grader's own user: degraded, and ``mha-grade batch``
  refuses it unless told (``--unconfined``).
* ``none``: root with neither a group nor a learner user (the kernel never applies
  ``RLIMIT_NPROC`` to uid 0), or not Linux: nothing caps the learner's threads.

**Memory** (what the address-space limit of ``child.py`` does not see: a ``memfd_create`` file
or a tmpfs file is in no process's address space or resident set):

* ``cgroup``: a memory control group per child (in cgroup v2 its files memory.max, and
  memory.swap.max at 0; in v1 memory.limit_in_bytes and memory.memsw.limit_in_bytes), of the
  exercise's allowance or half of what the groups above it and the machine have left
  (:meth:`MemoryGroups.headroom`), where this process may create one. The kernel charges every page the child
  owns to it (its heap, files in memory, shared memory), its OOM killer ends the child alone,
  and the grader reads the group's OOM kills: "ran out of memory" is the kernel's count,
  never the learner's word.
* ``capped``: no such group. ``memfd_create`` is refused (``seccomp.py``), the child may hold
  :data:`FILES` descriptors (pipes' buffers are kernel memory too), its scratch is the 64 MB
  tmpfs (or each file 64 MB), and ``/dev/shm`` is not writable (Landlock).

Either way the child's ``oom_score_adj`` is 1000: whichever OOM killer runs (a container's, the
machine's) picks the learner's process before the grader.

**Scratch**: where the child can have a mount namespace of its own (root; an ordinary user
through its user namespace), a tmpfs of :data:`SCRATCH_MB` (and :data:`SCRATCH_FILES` files)
is mounted on its scratch directory there: writes beyond it fail with ENOSPC, and it
vanishes with the child (nothing to clean up, nothing on disk). Elsewhere only each file is
capped (``RLIMIT_FSIZE``, ``child.py``); the grader removes the directory afterwards even if
the learner made it read-only (:func:`.cleanup.remove_tree`).
"""
from __future__ import annotations

import ctypes
import errno
import os
import sys
import time

TASKS = 64  # tasks (the child's threads, itself included) per child
SCRATCH_MB = 64  # as RLIMIT_FSIZE's one file: an honest exercise writes almost nothing
SCRATCH_FILES = 4096
LEARNER_USER_TASKS = 256  # all learners' tasks at once, under --run-as without a group
MEMORY_CEILING = 2  # exercises' memory allowances the learner's code may raise its own limit to
FILES = 256  # descriptors per child (RLIMIT_NOFILE, hard): an honest exercise opens a few dozen
OOM_SCORE_ADJ = 1000  # the child first, for any OOM killer
MEMORY_FLOOR_MB = 128  # a child's memory group is never limited below this (an honest exercise needs far less)

_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
_PREFIX = "mha-grade-"


# ------------------------------------------------------------------ what this machine offers

def pids_directory() -> str | None:
    """This process's group in the cgroup hierarchy holding the pids controller (v1's ``pids``,
    or v2's when it offers pids there), if any."""
    return controller_directory("pids")


def memory_directory() -> str | None:
    """This process's group in the hierarchy holding the memory controller, if any."""
    return controller_directory("memory")


def controller_directory(controller: str) -> str | None:
    try:
        with open("/proc/self/cgroup") as f:
            memberships = f.read()
        with open("/proc/self/mountinfo") as f:
            mounts = f.read()
    except OSError:
        return None
    return find_controller_directory(controller, memberships, mounts, _read)


def find_pids_directory(memberships: str, mounts: str, read) -> str | None:
    """:func:`pids_directory` from the texts of ``/proc/self/cgroup`` and ``mountinfo``;
    ``read(path)`` gives a cgroup v2 directory's ``cgroup.controllers``."""
    return find_controller_directory("pids", memberships, mounts, read)


def find_controller_directory(controller: str, memberships: str, mounts: str, read) -> str | None:
    """This process's group of the hierarchy holding ``controller`` ("pids", "memory"), from the
    texts of ``/proc/self/cgroup`` and ``mountinfo``; ``read(path)`` gives a cgroup v2
    directory's ``cgroup.controllers``."""
    groups = [line.split(":", 2) for line in memberships.splitlines() if line.count(":") >= 2]
    for mount in (line.split() for line in mounts.splitlines()):
        if "-" not in mount:
            continue
        dash = mount.index("-")
        fstype, root, point, options = mount[dash + 1], mount[3], mount[4], mount[dash + 3].split(",")
        for _, controllers, path in groups:
            v1 = fstype == "cgroup" and controller in controllers.split(",") and controller in options
            v2 = fstype == "cgroup2" and controllers == ""
            if not (v1 or v2) or not (path + "/").startswith(root.rstrip("/") + "/"):
                continue
            where = os.path.join(point, path[len(root.rstrip("/")):].lstrip("/")).rstrip("/") or "/"
            if v2 and controller not in read(os.path.join(where, "cgroup.controllers")).split():
                continue
            return where
    return None


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


_PROBED: dict = {}


def namespaces() -> str:
    """``"mount"`` (root: a private mount namespace), ``"user"`` (a user namespace with its own
    mounts), or ``""``: what a child can enter to have a tmpfs scratch of its own. Tried once,
    in a forked process that does exactly what a child does (minus the learner)."""
    if "ns" not in _PROBED:
        _PROBED["ns"] = _probe_namespaces()
    return _PROBED["ns"]


def _probe_namespaces() -> str:
    if not sys.platform.startswith("linux"):
        return ""
    import tempfile  # deferred: the probe alone needs it; mha-grade's start-up imports this module

    kind = "mount" if os.geteuid() == 0 else "user"
    where = tempfile.mkdtemp(prefix="mha-probe-")
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                enter_namespace(kind, where, os.getuid(), os.getgid())
                code = 0
            finally:
                os._exit(code)
        return kind if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else ""
    except OSError:
        return ""
    finally:
        os.rmdir(where)


def plan(run_as: bool) -> dict:
    """How the children's tasks and scratch will be capped here: ``tasks`` (a mode named in
    the module's docstring), ``group`` (the pids directory under which the zygote makes its
    group, for ``cgroup``) and ``scratch`` (``"tmpfs"`` or ``"file"``)."""
    if not sys.platform.startswith("linux"):  # none of these exists elsewhere (and no child applies them)
        return {"tasks": "none", "group": None, "namespace": "", "scratch": "file", "memory": "none",
                "memory_group": None}
    group = pids_directory()
    if group is not None and not _may_make_group(group):
        group = None
    memory = memory_directory() if os.environ.get("MHA_GRADE_NO_MEMORY_CGROUP") != "1" else None
    if memory is not None and not _may_make_group(memory, "memory"):
        memory = None
    ns = namespaces()
    if group:
        tasks = "cgroup"
    elif os.geteuid() == 0:
        tasks = "user" if run_as else "none"
    else:
        tasks = "userns" if ns == "user" else "shared"
    return {"tasks": tasks, "group": group, "namespace": ns, "scratch": "tmpfs" if ns else "file",
            "memory": "cgroup" if memory else "capped", "memory_group": memory}


def _may_make_group(parent: str, controller: str = "pids") -> bool:
    """Whether a group can be made here with a pids (or memory) limit (tried: access bits do not
    tell a read-only cgroup file system, or v2's rules on delegation)."""
    key = f"group:{controller}:{parent}"
    if key in _PROBED:
        return _PROBED[key]
    probe = os.path.join(parent, f"{_PREFIX}probe-{os.getpid()}")
    try:
        os.mkdir(probe)
    except OSError:
        ok = False
    else:
        ok = any(os.path.exists(os.path.join(probe, name)) for name in _LIMIT_FILES[controller])
        try:
            os.rmdir(probe)
        except OSError:
            pass
    _PROBED[key] = ok
    return ok


_LIMIT_FILES = {"pids": ("pids.max",), "memory": ("memory.max", "memory.limit_in_bytes")}


def describe(p: dict) -> tuple[list[str], list[str]]:
    """(what caps the learner's tasks and scratch here, what is missing), for the report."""
    layers, missing = [], []
    tasks = {
        "cgroup": f"at most {TASKS} threads per child (pids cgroup)",
        "userns": f"at most {TASKS} threads per child (a user namespace of its own)",
        "user": f"at most {LEARNER_USER_TASKS} threads for all learners (the learner user's process cap)",
    }.get(p["tasks"])
    if tasks:
        layers.append(tasks)
    elif p["tasks"] == "shared":
        missing.append(f"the learner's threads count against the grader's own user (at most {TASKS} more "
                       "than the user had per child; no pids cgroup may be created and no user namespace "
                       "either: run as root with --run-as, or delegate a cgroup with the pids controller)")
    elif not sys.platform.startswith("linux"):
        missing.append(f"nothing caps the learner's threads on {sys.platform} (pids cgroups and user "
                       "namespaces are Linux's)")
    else:
        missing.append("nothing caps the learner's threads (root is exempt from the process cap, and no "
                       "pids cgroup may be created here: use --run-as)")
    if p["scratch"] == "tmpfs":
        layers.append(f"a {SCRATCH_MB} MB scratch per child (tmpfs)")
    if p.get("memory") == "cgroup":
        layers.append("every page of each child's memory counted (memory cgroup)")
    elif p.get("memory") == "capped":
        layers.append(f"no memfd_create, at most {FILES} descriptors per child (no memory cgroup)")
    return layers, missing


# ------------------------------------------------------------------ the zygote's group

class Groups:
    """The zygote's pids group (``<pids directory>/mha-grade-<zygote pid>``), in which each
    child makes its own; removed with the zygote. Groups a killed zygote left behind are
    removed when the next one starts."""

    def __init__(self, parent: str | None):
        self.base = None
        if parent is None:
            return
        _remove_stale(parent)
        base = os.path.join(parent, f"{_PREFIX}{os.getpid()}")
        os.mkdir(base)
        if os.path.exists(os.path.join(parent, "cgroup.subtree_control")):  # v2: pids for its children
            _write(os.path.join(base, "cgroup.subtree_control"), "+pids")
        self.base = base

    def enter(self) -> None:
        """In a fresh child, before any learner code: a group of its own, capped, and into it."""
        if self.base is None:
            return
        mine = os.path.join(self.base, str(os.getpid()))
        os.mkdir(mine)
        _write(os.path.join(mine, "pids.max"), str(TASKS))
        _write(os.path.join(mine, "cgroup.procs"), str(os.getpid()))

    def refused(self, pid: int) -> int:
        """How many new tasks the child's group refused (``pids.events``' max count)."""
        if self.base is None:
            return 0
        for line in _read(os.path.join(self.base, str(pid), "pids.events")).splitlines():
            if line.startswith("max "):
                return int(line.split()[1])
        return 0

    def release(self, pid: int) -> None:
        """Remove a reaped child's group (empty once the child is reaped)."""
        if self.base is not None:
            _rmdir(os.path.join(self.base, str(pid)))

    def close(self) -> None:
        if self.base is not None:
            for entry in os.scandir(self.base):
                if entry.is_dir(follow_symlinks=False):
                    _rmdir(entry.path)
            _rmdir(self.base)
            self.base = None


class MemoryGroups:
    """The zygote's memory group (``<memory directory>/mha-grade-<zygote pid>``), in which each
    child makes its own, limited to its exercise's allowance with no swap; removed with the
    zygote (and, if it was killed, by the next one, as for :class:`Groups`)."""

    def __init__(self, parent: str | None, pids: "Groups | None" = None):
        self.base, self.v2, self.shared = None, False, False
        if parent is None:
            return
        if pids is not None and pids.base is not None and os.path.dirname(pids.base) == parent:
            # One cgroup v2 hierarchy: a process is in one group only, the pids group, which
            # takes the memory controller too (its directory made and removed by ``pids``).
            _write(os.path.join(pids.base, "cgroup.subtree_control"), "+memory")
            self.base, self.v2, self.shared = pids.base, True, True
            return
        _remove_stale(parent)
        base = os.path.join(parent, f"{_PREFIX}{os.getpid()}")
        os.mkdir(base)
        self.v2 = os.path.exists(os.path.join(parent, "cgroup.subtree_control"))
        if self.v2:
            _write(os.path.join(base, "cgroup.subtree_control"), "+memory")
        self.base = base

    def enter(self, limit_mb: int) -> None:
        """In a fresh child, before any learner code: a group of its own, limited, and into it."""
        if self.base is None:
            return
        mine = os.path.join(self.base, str(os.getpid()))
        if not self.shared:
            os.mkdir(mine)
        limit = str(min(limit_mb * 2**20, self.headroom()))
        if self.v2:
            _write(os.path.join(mine, "memory.max"), limit)
            _write_if_there(os.path.join(mine, "memory.swap.max"), "0")
            _write_if_there(os.path.join(mine, "memory.oom.group"), "1")
        else:
            _write(os.path.join(mine, "memory.limit_in_bytes"), limit)
            _write_if_there(os.path.join(mine, "memory.memsw.limit_in_bytes"), limit)  # no swap beyond it
            _write_if_there(os.path.join(mine, "memory.swappiness"), "0")
        if not self.shared:
            _write(os.path.join(mine, "cgroup.procs"), str(os.getpid()))

    def headroom(self) -> int:
        """Bytes a child may have so that the two at work (the grader's ``PARALLEL``) fit in what
        the groups above them (a container's) and the machine have left: half of the least, and
        at least :data:`MEMORY_FLOOR_MB`. Then the child's own group is the one whose limit is
        met, and the OOM killer ends a child that fills memory its resident size does not show
        (memfd pages), never its neighbour or the grader, which a container's OOM killer would
        choose between by resident size."""
        left = []
        where = os.path.dirname(self.base)
        while len(where) > len("/sys/fs/cgroup") and where.startswith("/sys/fs/cgroup"):
            limit = _read(os.path.join(where, "memory.max" if self.v2 else "memory.limit_in_bytes")).strip()
            used = _read(os.path.join(where, "memory.current" if self.v2 else "memory.usage_in_bytes")).strip()
            if limit.isdigit() and used.isdigit():
                left.append(int(limit) - int(used))
            where = os.path.dirname(where)
        for line in _read("/proc/meminfo").splitlines():
            if line.startswith("MemAvailable:") and line.split()[1].isdigit():
                left.append(int(line.split()[1]) * 1024)
        return max(MEMORY_FLOOR_MB * 2**20, min(left, default=2**62) // 2)

    def measured(self, pid: int) -> tuple[int, int, int]:
        """``(oom_kills, limit_mb, peak_mb)`` of a reaped child's group; ``(-1, 0, 0)`` without one."""
        if self.base is None:
            return -1, 0, 0
        mine = os.path.join(self.base, str(pid))
        events = _read(os.path.join(mine, "memory.events" if self.v2 else "memory.oom_control"))
        kills = next((int(line.split()[1]) for line in events.splitlines()
                      if line.startswith("oom_kill ") and line.split()[1].isdigit()), -1)
        limit = _read(os.path.join(mine, "memory.max" if self.v2 else "memory.limit_in_bytes")).strip()
        peak = _read(os.path.join(mine, "memory.peak" if self.v2 else "memory.max_usage_in_bytes")).strip()
        return (kills, int(limit) // 2**20 if limit.isdigit() else 0, int(peak) // 2**20 if peak.isdigit() else 0)

    def release(self, pid: int) -> None:
        if self.base is not None and not self.shared:
            _rmdir(os.path.join(self.base, str(pid)))

    def close(self) -> None:
        if self.base is not None and not self.shared:
            for entry in os.scandir(self.base):
                if entry.is_dir(follow_symlinks=False):
                    _rmdir(entry.path)
            _rmdir(self.base)
            self.base = None


def _write_if_there(path: str, text: str) -> None:
    if os.path.exists(path):
        _write(path, text)


def oom_first() -> None:
    """This process first for any OOM killer (``/proc/self/oom_score_adj``; raising it needs no privilege)."""
    try:
        _write("/proc/self/oom_score_adj", str(OOM_SCORE_ADJ))
    except OSError:
        pass


def _rmdir(path: str) -> None:
    for _ in range(50):  # a child's last task may take a moment to leave its group once reaped
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno != errno.EBUSY:
                return
            time.sleep(0.01)


def forget(zygote: int) -> None:
    """Remove the groups of a zygote that is gone (killed before it could remove them itself)."""
    for parent in (pids_directory(), memory_directory()):
        if parent is not None and not os.path.exists(f"/proc/{zygote}"):
            _remove_group(os.path.join(parent, f"{_PREFIX}{zygote}"))


def _remove_group(path: str) -> None:
    try:
        for child in os.scandir(path):
            if child.is_dir(follow_symlinks=False):
                os.rmdir(child.path)
        os.rmdir(path)
    except OSError:
        pass


STALE_NEAR = 256  # sibling groups of this process's own looked at for a killed zygote's groups


def _remove_stale(parent: str) -> None:
    """Remove the groups killed zygotes left: in ``parent``, and in the groups beside it (a
    killed run's shell, terminal or job had a group of its own, and no later run starts there:
    systemd's session scopes, a job runner's per-command groups). A group is stale when its
    zygote's pid is gone, or is now another process's (started after the group was made)."""
    places = [parent]
    try:
        places += [e.path for e in list(os.scandir(os.path.dirname(parent)))[:STALE_NEAR]
                   if e.is_dir(follow_symlinks=False) and e.path != parent and not e.name.startswith(_PREFIX)]
    except OSError:
        pass
    for place in places:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(_PREFIX) and name[len(_PREFIX):].isdigit() and _stale(entry.path, int(name[len(_PREFIX):])):
                _remove_group(entry.path)


def _stale(group: str, pid: int) -> bool:
    """Whether ``pid``'s group is a dead zygote's: no such process, or one younger than the group."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # starttime, in clock ticks after boot
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except FileNotFoundError:
        return True
    except (OSError, ValueError, IndexError, StopIteration):
        return False  # unreadable: leave it (a live zygote's, perhaps)
    try:
        made = os.stat(group).st_ctime
    except OSError:
        return False
    return boot + ticks / os.sysconf("SC_CLK_TCK") > made + 1  # the pid's process began after its group


# ------------------------------------------------------------------ a child

def enter_namespace(kind: str, workdir: str, uid: int, gid: int) -> None:
    """Mount a tmpfs of ``SCRATCH_MB`` on ``workdir``, seen by this process only: ``"mount"``
    (root) in a private mount namespace, ``"user"`` in a user namespace of its own mapping
    ``uid`` and ``gid`` to themselves. Raises OSError if the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    if kind == "user":
        _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    else:
        _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # Nothing mounted here may reach the grader's namespace (a root's copy shares its mounts).
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount(/, MS_PRIVATE)")
    options = f"size={SCRATCH_MB}m,nr_inodes={SCRATCH_FILES},mode=0700".encode()
    _check(libc.mount(b"tmpfs", os.fsencode(workdir), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, options),
           f"mount tmpfs on {workdir}")


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def user_tasks(uid: int) -> int:
    """Tasks (threads) of the processes whose real uid is ``uid`` now: what RLIMIT_NPROC counts."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                total += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return total
