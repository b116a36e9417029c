"""Benchmark: what one learner's thread bomb and scratch filler cost a class.

``mha-grade batch --jobs 2`` on a class of honest learners (copies of the solutions), one
learner whose softmax starts THREADS threads and holds them HOLD seconds (graded first, so
that its classmates are graded meanwhile) and one whose module fills its scratch with up to
TOTAL_MB and makes it read-only (``tests/adversarial/thread_bomb.py``, ``fill_scratch.py``).
Run as root, as root with a learner user, and (root only: the command is started as another
user) as an ordinary user whose own process cap is ``--user-tasks``, as on a shared teaching
server. Prints, per mode: the honest learners with full marks, the threads the bomb got, the
bytes the filler wrote, what is left in the temporary folder, feedback files holding a
traceback or the grader's path, and the wall time.

    sudo .venv/bin/python bench/learner_budget.py [--honest 40] [--threads 3000] [--hold 10]
        [--total-mb 1024] [--user-tasks 1000] [--time-limit 60] [--checkout PATH]

``--checkout PATH``: grade with the grader of another checkout (an older commit, unpacked
with ``git archive``), to compare. Exits 1 when an honest learner lost a point or something
was left behind.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

LEARNER_USER = "mha-confine-test"
GRADER_USER = "mha-budget-grader"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--honest", type=int, default=40)
    parser.add_argument("--threads", type=int, default=3000)
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("--total-mb", type=int, default=1024)
    parser.add_argument("--user-tasks", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0, help="per exercise: longer than the bomb holds")
    parser.add_argument("--checkout", help="the grader of this checkout instead")
    parser.add_argument("--mode", action="append", choices=["root", "run-as", "user"], help="only these modes")
    args = parser.parse_args()
    from budget_attack import run_class, system_user
    from rich.console import Console
    from rich.table import Table

    if os.geteuid() != 0:
        modes = [("this user", None, None)]
    elif shutil.which("useradd"):
        system_user(LEARNER_USER)
        modes = [("root", None, None), ("root, --run-as", None, LEARNER_USER),
                 ("ordinary user", system_user(GRADER_USER), None)]
        modes = [m for m, key in zip(modes, ("root", "run-as", "user")) if key in (args.mode or [key])]
    else:
        modes = [("root", None, None)]
    table = Table(title=f"{args.honest} honest learners + a {args.threads}-thread bomb + a {args.total_mb} MB filler"
                        + (f" ({args.checkout})" if args.checkout else ""))
    for col in ("mode", "honest full marks", "bomb's threads", "filler's bytes", "left in temp",
                "feedback with traceback", "wall s"):
        table.add_column(col)
    failed = False
    for name, user, run_as in modes:
        where = Path(tempfile.mkdtemp(prefix="mha-budget-bench-", dir="/tmp"))
        where.chmod(0o777)
        try:
            got = run_class(where, args.honest, args.threads, args.hold, args.total_mb, user=user,
                            tasks=args.user_tasks, run_as=run_as, checkout=args.checkout,
                            time_limit=args.time_limit)
        finally:
            from autograder.isolation.cleanup import remove_tree

            remove_tree(str(where))
        table.add_row(name + ("" if got["returncode"] == 0 else f" (exit {got['returncode']})"),
                      f"{got['honest_full']}/{got['honest']}", str(got["threads"]), str(got["written"]),
                      f"{got['left_entries']} ({got['left_bytes']} bytes)", str(len(got["leaky_feedback"])),
                      f"{got['wall']:.0f}")
        failed |= got["honest_full"] != args.honest or got["left_entries"] > 0 or got["returncode"] != 0
    Console(width=max(150, int(os.environ.get("COLUMNS", 0)))).print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
