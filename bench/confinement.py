"""What the kernel confinement costs each learner-side child, next to what the fork costs.

    python bench/confinement.py [--runs N]

In a process that has imported what a zygote imports, forks N children that each take their
own thread cap and scratch (``budget.py``: a pids group, a mount or user namespace with a
tmpfs, where the machine offers them), then build and apply the confinement
(``confine.ruleset`` + ``confine.enforce``: Landlock, seccomp, no_new_privs), each timed
inside the child; then N plain fork+exit round trips for scale.
Prints medians in microseconds; exits 1 when the confinement, or the CPU time of the thread
cap and scratch, costs more than TARGET_US per child (it is paid once per child, and a
submission uses about two), 2 when this machine cannot confine at all. The thread cap's wall
time is printed beside its CPU time: moving a process into a cgroup v1 group waits for the
kernel's RCU grace period (milliseconds, asleep) unless another move happened just before.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

TARGET_US = 5000


def confine_once(policy, workdir: str) -> tuple[float, float, float]:
    """(microseconds for the budget, its CPU time, for the confinement) in one child."""
    from autograder.isolation import budget, confine

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        t, cpu = time.perf_counter_ns(), time.process_time_ns()
        policy.groups.enter()
        policy.memory.enter(2048)
        if policy.budget["namespace"]:
            budget.enter_namespace(policy.budget["namespace"], workdir, os.getuid(), os.getgid())
        u, cpu = time.perf_counter_ns(), time.process_time_ns() - cpu
        confine.enforce(confine.ruleset(policy, workdir), policy)
        os.write(write, f"{(u - t) / 1000} {cpu / 1000} {(time.perf_counter_ns() - u) / 1000}".encode())
        os._exit(0)
    os.close(write)
    took = (os.read(read, 96) or b"nan nan nan").split()
    os.close(read)
    os.waitpid(pid, 0)
    policy.memory.release(pid)
    policy.groups.release(pid)
    return float(took[0]), float(took[1]), float(took[2])


def fork_once() -> float:
    t = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return (time.perf_counter_ns() - t) / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    from autograder.isolation import confine, zygote

    confined, why = confine.confinement()
    if not confined:
        print(f"not confined here: {why}")
        return 2
    zygote.preload()
    policy = confine.Policy()
    try:
        with tempfile.TemporaryDirectory() as workdir:
            both = [confine_once(policy, workdir) for _ in range(args.runs)]
    finally:
        policy.memory.close()
        policy.groups.close()
    capped, capped_cpu, inside = ([run[i] for run in both] for i in range(3))
    forks = [fork_once() for _ in range(args.runs)]
    layers = ", ".join(confine.status()["layers"])
    print(f"{'per child (median of %d)' % args.runs:32} {'us':>10}")
    print(f"{'confinement (' + str(len(policy.reads) + 3) + ' Landlock rules)':32} {statistics.median(inside):10.0f}")
    what = f"thread cap and scratch ({policy.budget['tasks']}, {policy.budget['scratch']})"
    print(f"{what:32} {statistics.median(capped):10.0f}  (CPU {statistics.median(capped_cpu):.0f})")
    print(f"{'fork + exit of the zygote':32} {statistics.median(forks):10.0f}")
    print(f"layers: {layers}")
    if max(statistics.median(inside), statistics.median(capped_cpu)) > TARGET_US:
        print(f"MISSED: the confinement costs more than {TARGET_US} us per child", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
