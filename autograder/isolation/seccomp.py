"""A seccomp filter for the learner's process: the system calls its code never needs.

Landlock (``confine.py``) decides which files and TCP ports a process may use; it does not
cover UDP, raw or pathname Unix sockets, nor the creation of processes. This filter refuses,
with an error the learner's code sees (never a kill, so a refused call costs an exercise at
most): every new socket (``socket``, ``socketpair``, and ``io_uring``, which can open sockets
without them; the child's socket to the grader was opened before), every new process
(``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``, ``clone3``: threads still start,
glibc falls back to ``clone`` when ``clone3`` says ENOSYS), ``execve``, ``ptrace`` and
reading another process's memory, the namespace and mount calls, System V and POSIX message
IPC (a channel between two learners of a batch), the kernel's riskier interfaces (bpf,
perf_event_open, userfaultfd, keys), ``memfd_create`` where no memory cgroup counts its pages
(``budget.py``), ``truncate`` by path (Landlock checks it only from ABI 3;
an open file can still be truncated), and unsetting the death signal that ties the child to
the zygote (``prctl(PR_SET_PDEATHSIG)``).

Written here with ctypes (a classic BPF program of ~40 instructions, x86_64 and aarch64)
because the Python bindings of libseccomp need its C library, which is not installed
everywhere the grader runs (Gradescope's image, learners' laptops); a missing layer is
reported, never silently skipped (:func:`available`).
"""
from __future__ import annotations

import ctypes
import errno
import platform

# <linux/audit.h>, and the numbers of the refused calls per architecture.
_ARCH = {
    "x86_64": (0xC000003E, {
        "socket": 41, "socketpair": 53, "clone": 56, "fork": 57, "vfork": 58, "execve": 59,
        "ptrace": 101, "execveat": 322, "process_vm_readv": 310, "process_vm_writev": 311,
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "io_uring_setup": 425, "clone3": 435, "shmget": 29, "msgget": 68, "semget": 64, "mq_open": 240,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248,
        "request_key": 249, "prctl": 157, "truncate": 76, "memfd_create": 319,
    }),
    "aarch64": (0xC00000B7, {
        "socket": 198, "socketpair": 199, "clone": 220, "execve": 221, "ptrace": 117, "execveat": 281,
        "process_vm_readv": 270, "process_vm_writev": 271, "unshare": 97, "setns": 268, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "io_uring_setup": 425, "clone3": 435, "shmget": 194,
        "msgget": 186, "semget": 190, "mq_open": 180, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "keyctl": 219, "add_key": 217, "request_key": 218, "prctl": 167, "truncate": 45, "memfd_create": 279,
    }),
}
_ERRNO = {"clone3": errno.ENOSYS, "io_uring_setup": errno.ENOSYS}  # "not here": callers fall back
_X32_BIT = 0x40000000  # x86_64's x32 numbering: refused as a whole
_CLONE_THREAD = 0x00010000

# <linux/filter.h>, <linux/seccomp.h>
_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data, little endian
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG = 22, 2, 38, 1


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def machine() -> str:
    return platform.machine().lower().replace("arm64", "aarch64")


def available() -> tuple[bool, str]:
    """Whether this kernel and architecture take the filter, and if not why."""
    if machine() not in _ARCH:
        return False, f"no seccomp filter written for {platform.system()} on {platform.machine()}"
    try:
        with open("/proc/self/status") as f:
            if not any(line.startswith("Seccomp:") for line in f):
                return False, "this kernel has no seccomp"
    except OSError:
        return False, "this kernel has no seccomp"
    return True, "seccomp filter"


def program(memfd: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k) instructions. ``memfd``: allow ``memfd_create`` (where a
    memory cgroup counts its pages; elsewhere such a file's memory would be nobody's)."""
    arch, numbers = _ARCH[machine()]
    if memfd:
        numbers = {name: nr for name, nr in numbers.items() if name != "memfd_create"}
    ins = [(_LD_ABS_W, 0, 0, _OFF_ARCH), (_JEQ, 1, 0, arch), (_RET, 0, 0, _KILL_PROCESS),
           (_LD_ABS_W, 0, 0, _OFF_NR)]
    if arch == _ARCH["x86_64"][0]:
        ins += [(_JGE, 0, 1, _X32_BIT), (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    for name, nr in numbers.items():
        if name == "clone":  # a thread is a clone with CLONE_THREAD: allowed
            ins += [(_JEQ, 0, 4, nr), (_LD_ABS_W, 0, 0, _OFF_ARG0), (_JSET, 0, 1, _CLONE_THREAD),
                    (_RET, 0, 0, _ALLOW), (_RET, 0, 0, _RET_ERRNO | errno.EPERM)]
        elif name == "prctl":  # all but PR_SET_PDEATHSIG: the child dies with the zygote, always
            ins += [(_JEQ, 0, 4, nr), (_LD_ABS_W, 0, 0, _OFF_ARG0), (_JEQ, 0, 1, _PR_SET_PDEATHSIG),
                    (_RET, 0, 0, _RET_ERRNO | errno.EPERM), (_RET, 0, 0, _ALLOW)]
        else:
            ins += [(_JEQ, 0, 1, nr), (_RET, 0, 0, _RET_ERRNO | _ERRNO.get(name, errno.EPERM))]
    return ins + [(_RET, 0, 0, _ALLOW)]


_LOADED: list = []  # the program as ctypes structures, built once (in the zygote) for every child


def prepare(memfd: bool = False) -> None:
    """Build the filter's structures now (the zygote), so that each child only loads them."""
    if not _LOADED:
        ins = program(memfd)
        table = (_Filter * len(ins))(*[_Filter(*i) for i in ins])
        _LOADED[:] = [table, _Program(len(ins), table), ctypes.CDLL(None, use_errno=True)]


def install(memfd: bool = False) -> None:
    """Load the filter on this thread (the child has no other) and its future threads;
    OSError if the kernel refuses it."""
    prepare(memfd)
    _, prog, libc = _LOADED
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # required for an unprivileged filter
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
