"""The grader started where a container runtime's default seccomp profile refuses user
namespaces (Kubernetes' RuntimeDefault, Docker's and Podman's default): emulated here by a
filter that makes ``unshare`` fail with EPERM, as those profiles do for a process without
CAP_SYS_ADMIN, installed before ``mha-grade`` starts and inherited by it.

As an ordinary user (no pids cgroup of its own) the batch cannot cap one learner's threads:
it refuses, exit 2, naming the setting to change and the profile the project ships; nothing
is written. Where a pids cgroup caps them (root), it confines with what remains (the cgroup,
Landlock, its own seccomp filter; a file for scratch) and says so, naming the same setting.
"""
import ctypes
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MHA_GRADE = Path(sys.executable).parent / "mha-grade"

# unshare refused with EPERM, everything else allowed (x86_64 numbers; the arch not checked:
# this emulation runs only on x86_64)
LAUNCHER = r"""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
code = b"".join(struct.pack("HBBI", *op) for op in (
    (0x20, 0, 0, 0),                       # A = the system call's number
    (0x15, 0, 1, 272),                     # if A == unshare
    (0x06, 0, 0, 0x00050000 | 1),          #   return ERRNO(EPERM)
    (0x06, 0, 0, 0x7FFF0000)))             # return ALLOW
buf = ctypes.create_string_buffer(code)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
prog = Prog(len(code) // 8, ctypes.addressof(buf))
assert libc.prctl(38, 1, 0, 0, 0) == 0                     # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0    # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
os.execv(sys.argv[1], sys.argv[1:])
"""


@pytest.mark.skipif(platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
                    reason="the emulated profile is x86_64 Linux's")
def test_blocked_user_namespaces_are_refused_naming_the_seccomp_setting(tmp_path):
    work = tmp_path / "work"
    (work / "class" / "ada").mkdir(parents=True)
    (work / "class" / "ada" / "attention.py").write_text("import numpy as np\n")
    capped = _cgroup_of_my_own()
    run = subprocess.run([sys.executable, "-c", LAUNCHER, str(MHA_GRADE), "batch", str(work / "class"),
                          "--out", str(work / "out"), "--jobs", "1", "--quiet", "-e", "softmax"],
                         capture_output=True, text=True, cwd=work, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert "Seccomp: 2" in run.stderr and "securityContext.seccompProfile" in run.stderr, run.stderr
    assert "deploy/kubernetes/seccomp-mha-grade.json" in run.stderr
    if capped:  # confined with what remains, and said
        assert run.returncode == 0, run.stderr
        assert "confined without user namespaces" in run.stderr and (work / "out" / "grades.csv").is_file()
    else:
        assert run.returncode == 2 and "one learner's threads could starve" in run.stderr, run.stderr
        assert not (work / "out").exists()


def _cgroup_of_my_own() -> bool:
    from autograder.isolation import budget

    return budget.plan(run_as=False)["tasks"] == "cgroup"
