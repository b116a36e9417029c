"""Every mutant of ``solutions/`` graded, and every sentence of its feedback checked against it.

The mutator and the checks are ``tests/mutation.py`` (``tests/test_mutants.py`` runs a fixed
sample in ``make test``). Per exercise: mutants made, killed (lose points), named (a killed
mutant whose feedback names a cause: a known bug, generated or listed, a relation between its
output and the reference's on every case, or the line that raised where one input flips the
outcome; "truly": named with every sentence true), located (not named, but an intervention or a
minimal pair of cases says which inputs fail), too slow (over the per-mutant limit), and false
sentences (every diagnosis, relation, pair and counted aggregate is re-checked on the cases); then
what grading a mutant costs (ms/mutant, in process, the cases' reference outputs kept) and how much
of it is the search (search ms: the generated catalogue and the relations; the same grading
without them, subtracted). The first mutant of an exercise pays for building its catalogue. Exits non-zero on
any false sentence.

    OMP_NUM_THREADS=1 .venv/bin/python bench/mutants.py [--per-exercise N] [--exercise ID ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import mutation  # noqa: E402

from autograder.grading.exercises import EXERCISES  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-exercise", type=int, default=None, help="a fixed sample of this many per exercise")
    parser.add_argument("--exercise", nargs="*", default=list(EXERCISES), help="exercise ids (default: all)")
    parser.add_argument("--unnamed", action="store_true", help="print the feedback of killed mutants it names no cause for")
    parser.add_argument("--seconds", type=int, default=20, help="the limit of one mutant's grading")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    chosen = (mutation.sample(args.exercise, args.per_exercise) if args.per_exercise
              else [m for e in args.exercise for m in mutation.mutants(e)])
    table = mutation.run(chosen, args.seconds, timed=True)
    print(f"{'exercise':30} {'mutants':>8} {'killed':>7} {'named':>6} {'named %':>8} {'truly %':>8} {'located':>8} "
          f"{'slow':>5} {'false':>6} {'ms/mutant':>10} {'search ms':>10}")
    totals = {"mutants": 0, "killed": 0, "named": 0, "truly": 0, "located": 0, "slow": 0, "false": []}
    for exercise, row in [*table.items(), ("all", totals)]:
        if exercise != "all":
            for k in ("mutants", "killed", "named", "truly", "located", "slow", "false"):
                totals[k] += row[k]
        share, truly = (f"{100 * row[k] / row['killed']:.0f}%" if row["killed"] else "-" for k in ("named", "truly"))
        if exercise != "all":
            totals["seconds"] = totals.get("seconds", 0.0) + row["seconds"]
            totals["seconds_off"] = totals.get("seconds_off", 0.0) + row.get("seconds_off", 0.0)
        graded = max(row["mutants"] - row["slow"], 1)
        per, search = (1000 * row.get("seconds", 0.0) / graded,
                       1000 * (row.get("seconds", 0.0) - row.get("seconds_off", 0.0)) / graded)
        print(f"{exercise:30} {row['mutants']:8} {row['killed']:7} {row['named']:6} {share:>8} {truly:>8} "
              f"{row['located']:8} {row['slow']:5} {len(row['false']):6} {per:10.0f} {search:10.0f}")
    print(f"({time.perf_counter() - started:.0f} s)")
    for exercise, row in table.items():
        for sentence in row["false"]:
            print(f"FALSE {exercise}: {sentence}")
    if args.unnamed:
        for exercise, row in table.items():
            for text in row["unnamed"]:
                print(f"UNNAMED {exercise}: {text}")
    return 1 if totals["false"] else 0


if __name__ == "__main__":
    sys.exit(main())
