"""``mha-grade``: grade a submission from the command line.

    mha-grade [SUBMISSION] [--exercise ID ...] [--json PATH] [--gradescope PATH]
              [--seed N | --seed-file PATH] [--time-limit S] [--budget S] [--quiet] [--run-as USER]
    mha-grade batch DIR ...          (many submissions: autograder/classroom/batch.py)
    mha-grade merge DIR ...          (the parts of ``batch --shard i/N``: autograder/classroom/shards.py)
    mha-grade term TERM.toml ...     (a term's assignments, one gradebook: autograder/classroom/term.py)

The learner-side process (the zygote) is started before the grader imports its checks and
the reference solutions: torch is imported once, here, and the zygote forked from this
process then, so it holds no reference code and the grader needs no second torch import
(what may be imported before the fork: ``.importlinter``; a process that already holds
reference code starts a fresh interpreter instead, ``isolation/sandbox.py``). Nor does it
hold the grader's arguments (the seed, the output paths) or environment: run as a program on
Linux, ``mha-grade`` checks its options (the submission is read after), then replaces itself
by a fresh image (``isolation/reexec.py``) that forks the zygote first and only then reads the
options and the environment (``mha-grade batch`` likewise, with a zygote per grader: none
imports torch again). The seed is best given as ``--seed-file`` (a file only the grader can
read), never seen by any other process. Exit status: 0 when grading completed, whatever the
score; 2 when the submission or the options are unusable (a submission refused whole still
gets its ``--gradescope`` results: every exercise at 0, and why); 1 when the grader itself failed.

Every start pays what this module imports at its top, before the exec: what only grading
needs is imported where it is used (``tests/test_import_placement.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..isolation.reexec import OPTIONS_FD, can_reexec, read_options, reexec


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mha-grade",
        description="Grade multi-head attention exercises in an isolated process.",
        epilog="Also: `mha-grade batch DIR ...` grades many submissions, `mha-grade merge DIR ...` gathers the "
               "parts of `batch --shard i/N`, `mha-grade term TERM.toml ...` grades a term (when installed).",
    )
    p.add_argument("submission", nargs="?", default="mha_exercises",
                   help="a directory of exercise modules (attention.py, masking.py, ...) or a .zip "
                        "of one (default: ./mha_exercises)")
    p.add_argument("--exercise", "-e", action="append", metavar="ID",
                   help="grade only this exercise (repeatable)")
    p.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    p.add_argument("--gradescope", metavar="PATH",
                   help="write a Gradescope results.json (what learners see: never the seed nor a hidden value)")
    seed = p.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=int, default=0, help="seed of the randomized cases (default 0)")
    seed.add_argument("--seed-file", metavar="PATH",
                      help="read the seed from this file (keeps a secret seed off every command line)")
    p.add_argument("--time-limit", type=float, metavar="S",
                   help="seconds per exercise (default: each exercise's own, 10 s)")
    p.add_argument("--budget", type=float, metavar="S", help="seconds for the whole run (default 300)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the total")
    p.add_argument("--run-as", metavar="USER",
                   help="when run as root (Gradescope): run the learner's code as this unprivileged user")
    return p


def main(argv: list[str] | None = None) -> int:
    """``argv`` given (a library call): the zygote is a fresh interpreter, never a fork of a
    process holding the caller's state; as a program, see the module docstring."""
    options_fd = None
    if argv is None:
        argv = sys.argv[1:]
        options_fd = os.environ.pop(OPTIONS_FD, None)
        if argv[:1] == ["merge"]:  # grades nothing: no learner-side process, no fresh image
            return _merge(argv[1:])
        if argv[:1] == ["term"]:  # a batch per assignment, each starting its learner-side processes afresh
            return _term(argv[1:])
        if options_fd is None and can_reexec():
            batch = argv[:1] == ["batch"]
            checked = 0 if batch else _check(argv)  # batch checks its options itself, after
            if checked:
                return checked
            # Returns only if execve failed: grading goes on in this process then.
            reexec(argv, _image_args(argv[1:] if batch else argv, batch), "autograder.classroom.cli")
    zygotes, ahead = [], None
    if options_fd is not None:  # the fresh image: the zygotes first, then the options
        image = _image_parser().parse_args(argv)
        if image.ahead:  # before torch's import: reads the class on the other core meanwhile
            from .ahead import Ahead  # deferred: a batch's (multiprocessing), not before the exec

            ahead = Ahead.start(int(options_fd))
        from ..isolation import sandbox  # deferred: NumPy (protocol.py), not before the exec

        try:
            for _ in range(image.zygotes):
                zygotes.append(sandbox.Zygote(user=image.run_as))
                zygotes[-1].fork = False  # this process will hold the options: a restart starts afresh
        except (OSError, sandbox.ZygoteError) as err:
            print(f"mha-grade: cannot start the learner-side process: {err}", file=sys.stderr)
            return 1
        argv = read_options(int(options_fd))
    if argv[:1] == ["batch"]:
        return _batch(argv[1:], zygotes, ahead)
    if argv[:1] == ["merge"]:
        return _merge(argv[1:])
    if argv[:1] == ["term"]:
        return _term(argv[1:])
    return _grade(argv, zygotes[0] if zygotes else None)


def _grade(argv: list[str], zygote) -> int:
    from ..isolation import sandbox  # deferred: NumPy (protocol.py), not before the exec

    args = parser().parse_args(argv)
    try:
        submission, seed = _validate(args)
    except _Unusable as err:
        if zygote is not None:
            zygote.close()
        print(f"mha-grade: {err}", file=sys.stderr)
        if args.gradescope and isinstance(err, _Refused):  # the learner's to fix: results.json says so
            from ..atomic import write_atomic  # deferred: tempfile, not before the exec
            from .write.gradescope import refused  # deferred: NumPy (scoring), not before the exec

            why = str(err)  # the grader's path to the submission says nothing to the learner
            paths = sorted({str(Path(args.submission).resolve()), args.submission}, key=len, reverse=True)
            for path in paths:
                why = why.replace(path, "your submission") if len(path) > 1 else why
            write_atomic(args.gradescope, json.dumps(refused(why, args.exercise), indent=2))
        return 2
    if zygote is None:
        try:
            # A fresh interpreter: this process may hold its caller's secrets (a fork would copy them).
            zygote = sandbox.Zygote(user=args.run_as, fork=False)
        except (OSError, sandbox.ZygoteError) as err:
            print(f"mha-grade: cannot start the learner-side process: {err}", file=sys.stderr)
            return 1
    from .. import report as report_mod  # deferred: NumPy, not before the exec
    from ..atomic import write_atomic  # deferred: tempfile, not before the exec
    from ..scoring import points  # deferred: NumPy, not before the exec

    warning = report_mod.confinement_warning(zygote.confinement)
    if warning:
        print(f"mha-grade: {warning}", file=sys.stderr)
    if zygote.confinement.get("unbounded"):  # what one learner's threads may cost here (isolation/budget.py)
        print(f"mha-grade: note: {zygote.confinement['unbounded']}", file=sys.stderr)
    try:
        from ..grading import runner  # deferred: the references, once the zygote is forked (.importlinter)

        report = runner.grade_submission(submission, exercises=args.exercise, seed=seed,
                                         time_limit=args.time_limit, budget=args.budget, zygote=zygote)
    except ValueError as err:  # an unknown exercise id
        print(f"mha-grade: {err}", file=sys.stderr)
        return 2
    except sandbox.ZygoteError as err:
        print(f"mha-grade: {err}", file=sys.stderr)
        return 1
    finally:
        zygote.close()
    report.confinement = zygote.confinement
    # Written last, by this process only: anything the learner's code wrote there is replaced.
    if args.json:
        write_atomic(args.json, report_mod.to_json(report), mode=0o600)  # it holds the seed
    if args.gradescope:
        from .write.gradescope import results  # deferred: NumPy (scoring), not before the exec

        write_atomic(args.gradescope, json.dumps(results(report.to_dict()), indent=2), mode=0o600)
    if args.quiet:
        print(f"{points(report.shown()[1])}/{points(report.max_score)}")
    else:
        report_mod.print_table(report)
    return 0


class _Unusable(Exception):
    """The options or the submission cannot be graded (exit status 2)."""


class _Refused(_Unusable):
    """The submission cannot be graded: nothing in it, or its files refused (the learner's to fix)."""


def _validate(args, read_submission: bool = True):
    """The submission (None if not ``read_submission``) and the seed, or _Unusable saying why."""
    from ..spec import POINTS  # deferred: 10 ms that mha-grade --help need not pay

    unknown = [e for e in args.exercise or () if e not in POINTS]
    if unknown:  # ids known but without checks: the runner says so
        raise _Unusable(f"unknown exercise {', '.join(map(repr, unknown))}; the exercises are "
                        f"{', '.join(POINTS)}")
    seed = args.seed
    if args.seed_file:
        try:
            with open(args.seed_file) as f:
                text = f.read().strip()
        except OSError as err:
            raise _Unusable(f"--seed-file {args.seed_file}: cannot read it ({err.strerror})") from None
        try:
            seed = int(text)
        except ValueError:
            raise _Unusable(f"--seed-file {args.seed_file}: invalid int value {text[:20]!r}") from None
    if not read_submission:
        return None, seed
    from .. import submission as submission_mod  # deferred: read after the exec only (see _check)

    try:
        return submission_mod.load(args.submission), seed
    except submission_mod.SubmissionError as err:
        raise _Refused(str(err)) from None


# ------------------------------------------------------------- the fresh image (Linux)

def _check(argv: list[str]) -> int:
    """Exit status 2 with the message for unusable options, before the exec; 0 if usable.
    The submission is read once, after the exec (its reader's imports cost every run)."""
    args = parser().parse_args(argv)  # exits 2 itself on a malformed command line
    try:
        _validate(args, read_submission=False)
    except _Unusable as err:
        print(f"mha-grade: {err}", file=sys.stderr)
        return 2
    return 0


def _image_args(argv: list[str], batch: bool) -> list[str]:
    """What the fresh image needs before it reads the options: how many zygotes to fork (one
    per grader of a batch), the learner user and whether it is a batch; nothing else of the
    command line."""
    if batch:
        sniff = argparse.ArgumentParser(add_help=False)
        sniff.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
        sniff.add_argument("--run-as")
        try:
            known = sniff.parse_known_args(argv)[0]
        except SystemExit:  # a malformed --jobs: batch refuses it after the exec
            known = argparse.Namespace(jobs=0, run_as=None)
        count, run_as = max(0, min(known.jobs, os.cpu_count() or 1, 64)), known.run_as
    else:
        count, run_as = 1, parser().parse_args(argv).run_as
    return ["--zygotes", str(count), *(["--run-as", run_as] if run_as else []), *(["--ahead"] if batch else [])]


def _image_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--zygotes", type=int, default=1)
    p.add_argument("--run-as")
    p.add_argument("--ahead", action="store_true", help="a batch: fork the process ahead (classroom/ahead.py)")
    return p


def _batch(argv: list[str], zygotes: list, ahead) -> int:
    from . import batch  # deferred: NumPy and the whole batch, not before the exec

    return batch.main(argv, zygotes=zygotes, ahead=ahead)


def _merge(argv: list[str]) -> int:
    from . import batch  # deferred: NumPy and the whole batch, not before the exec

    return batch.merge_main(argv)


def _term(argv: list[str]) -> int:
    from . import term  # deferred: the batch, not before the exec

    return term.main(argv)


if __name__ == "__main__":
    sys.exit(main())
