"""Why the learners' code cannot be confined as fully as it should be here, in words that name
the setting to change: a batch says it before grading, with its refusal or its warning.

User namespaces give each learner process its own thread cap and a tmpfs scratch
(:mod:`..isolation.budget`). In a container the runtime's default seccomp profile (Docker's,
Podman's, Kubernetes' ``RuntimeDefault``) refuses ``unshare`` to a process without
``CAP_SYS_ADMIN``: the grader then finds no user namespace and, as an ordinary user, no thread
cap of the learners' own, which it refuses unless told otherwise. That is the pod's setting,
not the kernel's: this module tells the two apart by this process's own seccomp mode.
"""
from __future__ import annotations

PROFILE = "deploy/kubernetes/seccomp-mha-grade.json"


def seccomp_mode(status: str = "/proc/self/status") -> int:
    """0 (none), 1 (strict) or 2 (a filter) for this process; 0 where it cannot be read."""
    try:
        with open(status) as f:
            for line in f:
                if line.startswith("Seccomp:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def namespace_hint() -> str:
    """A sentence naming the seccomp setting that keeps the grader out of user namespaces, or
    '' when namespaces work here or no filter of this process is the cause."""
    from ..isolation import budget  # deferred: the probe forks, once

    if budget.namespaces() or seccomp_mode() != 2:
        return ""
    return ("this process runs under a seccomp filter (Seccomp: 2 in /proc/self/status) and cannot enter a user "
            "namespace: a container runtime's default profile refuses unshare() (Kubernetes: the pod's "
            "securityContext.seccompProfile RuntimeDefault; Docker or Podman: their default --security-opt "
            f"seccomp). Give the grader's container the profile {PROFILE} (type Localhost, as "
            "deploy/kubernetes/job.yaml does), or run it where user namespaces are allowed")
