"""``mha-grade``: grade a submission from the command line.

    mha-grade [SUBMISSION] [--exercise ID ...] [--json PATH] [--gradescope PATH]
              [--seed N] [--time-limit S] [--budget S] [--quiet] [--run-as USER]
    mha-grade batch DIR ...          (many submissions: autograder/classroom/batch.py)

The learner-side process (the zygote) is started before the grader imports its checks and
the reference solutions: torch is imported once, here, and the zygote forked from this
process then, so it holds no reference code and the grader needs no second torch import. Exit status: 0 when grading
completed, whatever the score; 2 when the submission or the options are unusable; 1 when
the grader itself failed.
"""
from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mha-grade",
        description="Grade multi-head attention exercises in an isolated process.",
        epilog="Also: `mha-grade batch DIR ...` grades many submissions (when installed).",
    )
    p.add_argument("submission", nargs="?", default="mha_exercises",
                   help="a directory of exercise modules (attention.py, masking.py, ...) or a .zip "
                        "of one (default: ./mha_exercises)")
    p.add_argument("--exercise", "-e", action="append", metavar="ID",
                   help="grade only this exercise (repeatable)")
    p.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    p.add_argument("--gradescope", metavar="PATH", help="write a Gradescope results.json")
    p.add_argument("--seed", type=int, default=0, help="seed of the randomized cases (default 0)")
    p.add_argument("--time-limit", type=float, metavar="S",
                   help="seconds per exercise (default: each exercise's own, 10 s)")
    p.add_argument("--budget", type=float, metavar="S", help="seconds for the whole run (default 300)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the total")
    p.add_argument("--run-as", metavar="USER",
                   help="when run as root (Gradescope): run the learner's code as this unprivileged user")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["batch"]:
        return _batch(argv[1:])
    args = parser().parse_args(argv)
    from . import submission as submission_mod
    from .spec import POINTS

    unknown = [e for e in args.exercise or () if e not in POINTS]
    if unknown:  # before any process starts; ids known but without checks: the runner says so
        print(f"mha-grade: unknown exercise {', '.join(map(repr, unknown))}; the exercises are "
              f"{', '.join(POINTS)}", file=sys.stderr)
        return 2

    try:  # a bad path is reported before any process starts
        submission = submission_mod.load(args.submission)
    except submission_mod.SubmissionError as err:
        print(f"mha-grade: {err}", file=sys.stderr)
        return 2
    from .isolation import sandbox

    try:
        zygote = sandbox.Zygote(user=args.run_as)  # first: before any reference code is imported
    except (OSError, sandbox.ZygoteError) as err:
        print(f"mha-grade: cannot start the learner-side process: {err}", file=sys.stderr)
        return 1
    try:
        from . import report as report_mod
        from .grading import runner

        report = runner.grade_submission(submission, exercises=args.exercise, seed=args.seed,
                                         time_limit=args.time_limit, budget=args.budget, zygote=zygote)
    except ValueError as err:  # an unknown exercise id
        print(f"mha-grade: {err}", file=sys.stderr)
        return 2
    except sandbox.ZygoteError as err:
        print(f"mha-grade: {err}", file=sys.stderr)
        return 1
    finally:
        zygote.close()
    # Written last, by this process only: anything the learner's code wrote there is replaced.
    if args.json:
        report_mod.write_atomic(args.json, report_mod.to_json(report))
    if args.gradescope:
        import json

        report_mod.write_atomic(args.gradescope, json.dumps(report_mod.to_gradescope(report), indent=2))
    if args.quiet:
        print(f"{report_mod._points(report.score)}/{report_mod._points(report.max_score)}")
    else:
        report_mod.print_table(report)
    return 0


def _batch(argv: list[str]) -> int:
    from .classroom import batch

    return batch.main(argv)


if __name__ == "__main__":
    sys.exit(main())
