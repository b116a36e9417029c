"""Runs a pytest selection on a busy machine, made busy by this script itself, so that a test's
dependence on load or on the pid range shows up when anyone reruns it (issue 38: a hostile
learner whose walk over /proc took longer than its case's CPU limit on a loaded machine).

    .venv/bin/python tests/busy.py --hogs 2 -- tests/test_confinement.py -k secret
    .venv/bin/python tests/busy.py --hogs 2 --runs 5 --pids-near-max -- tests/test_confinement.py

``--hogs N`` starts N processes that spin (``while True: pass``, one core each) before pytest
and kills them, by their own pids, when it ends. ``--pids-near-max`` (root) moves the pid
counter to just below ``pid_max`` first, so the run's processes get pids on both sides of the
wrap-around. ``--runs R`` runs the selection R times and counts the runs that failed. The exit
status is pytest's, or 1 when any of several runs failed. ``make test`` on a busy machine is
``tests/busy.py --hogs 2 --`` with no selection (all of ``testpaths``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOG = "while True: pass"


def start_hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.DEVNULL) for _ in range(n)]


def stop(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


def pids_near_max(margin: int = 200) -> int:
    """Sets the pid counter ``margin`` below ``pid_max``: the next processes wrap around.
    Returns the value set (needs root: ``/proc/sys/kernel/ns_last_pid``)."""
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    Path("/proc/sys/kernel/ns_last_pid").write_text(str(top - margin))
    return top - margin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hogs", type=int, default=2, help="processes spinning on a core each (default 2)")
    parser.add_argument("--runs", type=int, default=1, help="times to run the selection (default 1)")
    parser.add_argument("--pids-near-max", action="store_true",
                        help="before each run, move the pid counter just below pid_max (root)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: pytest's arguments")
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    failed, code = 0, 0
    for run in range(1, args.runs + 1):
        if args.pids_near_max:
            print(f"busy.py: pid counter set to {pids_near_max()}", flush=True)
        hogs = start_hogs(args.hogs)
        try:
            time.sleep(0.5)  # the hogs up and spinning before the first test starts
            code = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env).returncode
        finally:
            stop(hogs)
        failed += code != 0
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        print(f"busy.py: run {run}/{args.runs} with {args.hogs} hogs: pytest exit {code} "
              f"(load average {load})", flush=True)
    if args.runs > 1:
        print(f"busy.py: {failed} of {args.runs} runs failed", flush=True)
        return 1 if failed else 0
    return code


if __name__ == "__main__":
    sys.exit(main())
