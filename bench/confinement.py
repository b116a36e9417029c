"""What the kernel confinement costs each learner-side child, next to what the fork costs.

    python bench/confinement.py [--runs N]

In a process that has imported what a zygote imports, forks N children that each build and
apply the confinement (``confine.ruleset`` + ``confine.enforce``: Landlock, seccomp,
no_new_privs) and time it inside the child; then N plain fork+exit round trips for scale.
Prints medians in microseconds; exits 1 when the confinement costs more than TARGET_US per
child (it is paid once per child, and a submission uses about two), 2 when this machine
cannot confine at all.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

TARGET_US = 5000


def confine_once(policy, workdir: str) -> float:
    from autograder.isolation import confine

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        t = time.perf_counter_ns()
        confine.enforce(confine.ruleset(policy, workdir), policy)
        os.write(write, str((time.perf_counter_ns() - t) / 1000).encode())
        os._exit(0)
    os.close(write)
    took = float(os.read(read, 64) or "nan")
    os.close(read)
    os.waitpid(pid, 0)
    return took


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
    with tempfile.TemporaryDirectory() as workdir:
        inside = [confine_once(policy, workdir) for _ in range(args.runs)]
    forks = [fork_once() for _ in range(args.runs)]
    layers = ", ".join(confine.status()["layers"])
    print(f"{'per child (median of %d)' % args.runs:32} {'us':>10}")
    print(f"{'confinement (' + str(len(policy.reads) + 3) + ' Landlock rules)':32} {statistics.median(inside):10.0f}")
    print(f"{'fork + exit of the zygote':32} {statistics.median(forks):10.0f}")
    print(f"layers: {layers}")
    if statistics.median(inside) > TARGET_US:
        print(f"MISSED: the confinement costs more than {TARGET_US} us per child", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
